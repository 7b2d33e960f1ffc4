// FiringPool: the worker threads that fire shards. On-time slots go before catch-up work, at
// most one firing per shard runs at a time (a request for a busy shard is folded into it), and
// at least one worker is always kept free of catch-up work so the present stays on time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/shard_ledger.h"
#include "core/catchup_planner.h"
#include "core/shard_firer.h"
#include "core/shard_ticker.h"

namespace belfry {

class FiringPool final : public TickDispatcher {
 public:
  struct Worker {
    ShardFirer* firer = nullptr;    // not owned
    ShardLedger* ledger = nullptr;  // not owned; used for catch-up scans
  };

  // Starts one thread per worker. REQUIRES: !workers.empty(); everything outlives the pool.
  FiringPool(const SchedulerConfig& cfg, std::vector<Worker> workers, Clock& clock);
  // Finishes the firings in progress, drops queued requests (the ledger still shows them as
  // not fired, so any node fires them later) and joins the threads.
  ~FiringPool() override;
  FiringPool(const FiringPool&) = delete;
  FiringPool& operator=(const FiringPool&) = delete;

  void DispatchOnTime(int32_t shard, int64_t minute) override;
  void DispatchCatchUpScan() override;
  // Blocks until every queued request has been handled and no firing is running.
  void Drain();
  void Stop();

 private:
  struct Request {
    enum class Kind { kFire, kScan };
    Kind kind = Kind::kFire;
    FireRequest fire;
  };

  void WorkerLoop(size_t index);
  bool PopLocked(bool allow_catch_up, Request* out);
  void HandleFire(const Worker& w, FireRequest req);
  void HandleScan(const Worker& w);

  const SchedulerConfig& cfg_;
  Clock& clock_;
  std::vector<Worker> workers_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Request> on_time_;
  std::deque<Request> catch_up_;  // fire requests from scans, and scans themselves
  std::vector<bool> busy_;              // per shard
  std::vector<int64_t> pending_;        // per shard: highest minute asked for while busy (-1)
  std::vector<EpochMs> retry_after_;    // per shard: backoff after a failed firing
  std::vector<int64_t> failures_;       // per shard: consecutive failures
  bool scan_queued_ = false;
  int32_t catch_up_running_ = 0;
  int32_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace belfry
