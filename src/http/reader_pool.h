// ReaderPool: the read sessions the admin API lends to its requests, one request per session at a
// time. Each session is a set of readers that are not thread-safe on their own (in production: a
// PgJobStore as the JobReader and the LoadReader, a PgExecutionStore and a PgShardLedger, each
// with its own lazily opened connection and prepared statements). The pool replaces one mutex
// around one session: up to size() requests read the database at once, and a request that finds
// every session busy waits at most `max_wait` before it is turned away (the server answers 503
// with Retry-After).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "belfry/execution.h"
#include "belfry/job_reader.h"
#include "belfry/load_reader.h"
#include "belfry/shard_ledger.h"

namespace belfry {

// One read session: the roles the admin API reads through. `jobs` and `load` may be one store;
// `executions` may be null (no execution history on this node).
struct ReadSession {
  JobReader* jobs = nullptr;
  LoadReader* load = nullptr;
  ShardLedger* ledger = nullptr;
  ExecutionStore* executions = nullptr;
};

class ReaderPool final {
 public:
  // REQUIRES: sessions is non-empty; every reader, ledger (and executions, when non-null) outlives
  // the pool; either every session has executions or none does.
  ReaderPool(std::vector<ReadSession> sessions, std::chrono::milliseconds max_wait);
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // A borrowed session, returned to the pool when the lease is destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), index_(other.index_) { other.pool_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    const ReadSession& operator*() const;
    const ReadSession* operator->() const { return &**this; }

   private:
    friend class ReaderPool;
    Lease(ReaderPool* pool, size_t index) : pool_(pool), index_(index) {}
    ReaderPool* pool_;
    size_t index_;
  };

  // A free session, waiting up to max_wait for one; nullopt when none freed up in time.
  std::optional<Lease> Borrow();

  bool has_executions() const { return sessions_.front().executions != nullptr; }

 private:
  void Return(size_t index);

  const std::vector<ReadSession> sessions_;
  const std::chrono::milliseconds max_wait_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<size_t> free_;  // indexes of idle sessions (a stack: the warmest is reused first)
};

}  // namespace belfry
