#include "app/bulk_op_runner.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "core/command_batch.h"

namespace belfry {

BulkOpRunner::BulkOpRunner(BulkOpStore& store, Clock& clock, OutcomePublisher publish, BulkOpRunnerOptions options)
    : store_(store), clock_(clock), publish_(std::move(publish)), options_(options) {}

StatusOr<BulkOpRunner::Round> BulkOpRunner::RunOnce() {
  Round round;
  StatusOr<std::optional<BulkOpState>> step = store_.RunBulkStep(options_.step_jobs, clock_.NowMs());
  if (!step.ok()) return step.status();
  if (step->has_value()) {
    round.stepped = true;
    const BulkOpState& s = **step;
    if (s.finished_at) {
      spdlog::info("bulk {} {}: finished after {} steps: matched {}, changed {}{}", CommandOpName(s.op.op), s.op.id,
                   s.steps, s.matched, s.changed, s.op.dry_run ? " (dry run)" : "");
    }
  }
  StatusOr<std::vector<BulkOpState>> finished = store_.UnpublishedBulkOps(100);
  if (!finished.ok()) return finished.status();
  for (const BulkOpState& s : *finished) {
    if (Status st = publish_(s.op.id, EncodeCommandOutcome(FinishedBulkOutcome(s))); !st.ok()) return st;
    if (Status st = store_.MarkBulkOpPublished(s.op.id, clock_.NowMs()); !st.ok()) return st;
    ++round.published;
  }
  return round;
}

void BulkOpRunner::Run(StopSignal& stop) {
  while (!stop.requested()) {
    StatusOr<Round> round = RunOnce();
    if (!round.ok()) spdlog::warn("bulk operations: {}", round.status().ToString());
    const int64_t rest = round.ok() && round->stepped ? options_.step_pause_ms : options_.idle_poll_ms;
    if (!clock_.SleepUntil(clock_.NowMs() + rest, stop)) return;
  }
}

}  // namespace belfry
