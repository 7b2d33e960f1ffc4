#include "app/sweeper.h"

#include <spdlog/spdlog.h>

#include "core/slot_math.h"

namespace belfry {

Sweeper::Sweeper(SweepStore& store, Clock& clock, SweeperOptions options)
    : store_(store), clock_(clock), options_(options) {}

template <typename SweepBatch, typename OnDeleted>
int64_t Sweeper::SweepInBatches(const char* what, SweepBatch sweep_batch, OnDeleted on_deleted, StopSignal& stop,
                                Round* round) {
  int64_t deleted = 0;
  for (;;) {
    StatusOr<int64_t> n = sweep_batch(options_.batch_rows);
    if (!n.ok()) {
      spdlog::warn("{}: {}", what, n.status().message());
      ++round->failures;
      break;
    }
    deleted += *n;
    if (*n > 0) on_deleted(*n);
    if (*n < options_.batch_rows || stop.requested()) break;
  }
  return deleted;
}

Sweeper::Round Sweeper::RunOnce(StopSignal& stop) {
  Round round;
  if (clock_.NowMs() >= next_history_ms_) {
    next_history_ms_ = clock_.NowMs() + options_.history_every_ms;
    StatusOr<PartitionSweep> swept =
        store_.MaintainExecutionPartitions(options_.history_retention_ms, options_.history_days_ahead);
    if (!swept.ok()) {
      spdlog::warn("execution history sweep: {}", swept.status().message());
      ++round.failures;
    } else {
      round.history_swept = true;
      if (swept->created > 0 || swept->dropped > 0 || swept->default_rows_deleted > 0) {
        spdlog::info("execution history sweep: created {} and dropped {} daily partitions, deleted {} expired "
                     "reports outside them", swept->created, swept->dropped, swept->default_rows_deleted);
      }
    }
  }

  const int64_t before_minute = EpochMinuteOf(clock_.NowMs()) - options_.one_shot_retention_ms / kMsPerMinute;
  round.one_shots_deleted = SweepInBatches(
      "one-shot sweep", [&](int32_t rows) { return store_.SweepOneShots(before_minute, rows); },
      [&](int64_t n) { spdlog::info("one-shot sweep: deleted {} one-shots older than minute {}", n, before_minute); },
      stop, &round);

  const EpochMs changes_before = clock_.NowMs() - options_.audit_retention_ms;
  round.changes_deleted = SweepInBatches(
      "change history sweep", [&](int32_t rows) { return store_.SweepJobChanges(changes_before, rows); },
      [](int64_t n) { spdlog::info("change history sweep: deleted {} published changes older than the retention", n); },
      stop, &round);
  return round;
}

void Sweeper::Run(StopSignal& stop) {
  do {
    RunOnce(stop);
  } while (clock_.SleepUntil(clock_.NowMs() + options_.round_every_ms, stop));
}

}  // namespace belfry
