// Sweeper: the background retention of `belfry serve`, off the trigger path. Each round keeps the
// execution history's daily partitions (when executions.trim_interval has passed; docs/executions.md,
// "History"), deletes the one-shots past scheduler.one_shot_retention (docs/executions.md,
// "Retention sweep") and the published audit-trail changes past commands.audit_retention
// (docs/audit-trail.md). Every sweep is idempotent, so every node runs one.
#pragma once

#include <cstdint>
#include <limits>

#include "app/sweep_store.h"
#include "belfry/clock.h"
#include "belfry/stop_signal.h"

namespace belfry {

struct SweeperOptions {
  int64_t one_shot_retention_ms = 24LL * 60 * 60 * 1000;    // scheduler.one_shot_retention
  int64_t audit_retention_ms = 30LL * 24 * 60 * 60 * 1000;  // commands.audit_retention
  int64_t history_retention_ms = 7LL * 24 * 60 * 60 * 1000; // executions.retention
  int64_t history_every_ms = 5 * 60 * 1000;                 // executions.trim_interval
  int32_t history_days_ahead = 3;  // daily partitions created ahead of today
  int32_t batch_rows = 10'000;     // rows a delete statement removes at most
  int64_t round_every_ms = 60'000; // rest between the end of a round and the next
};

// Thread-compatible: one thread runs it.
class Sweeper final {
 public:
  // `store` and `clock` must outlive the sweeper.
  Sweeper(SweepStore& store, Clock& clock, SweeperOptions options = {});
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  // What one round did. A failed sweep is logged and counted; the round goes on to the next.
  struct Round {
    bool history_swept = false;     // the history sweep was due and succeeded
    int64_t one_shots_deleted = 0;
    int64_t changes_deleted = 0;
    int32_t failures = 0;
  };
  // One round: the history sweep if due (the first round's always is: reports need today's
  // partition), then each retention delete in batches of batch_rows until a batch deletes
  // fewer, fails, or `stop` is requested.
  Round RunOnce(StopSignal& stop);

  // A round at once, then one round_every_ms after the end of each, until `stop`.
  void Run(StopSignal& stop);

 private:
  // Deletes in batches through `sweep_batch` until one deletes fewer than batch_rows, fails
  // (counted in round->failures) or `stop`; returns how many rows it deleted.
  template <typename SweepBatch, typename OnDeleted>
  int64_t SweepInBatches(const char* what, SweepBatch sweep_batch, OnDeleted on_deleted, StopSignal& stop,
                         Round* round);

  SweepStore& store_;
  Clock& clock_;
  const SweeperOptions options_;
  EpochMs next_history_ms_ = std::numeric_limits<EpochMs>::min();
};

}  // namespace belfry
