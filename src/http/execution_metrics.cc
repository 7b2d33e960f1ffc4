#include "http/execution_metrics.h"

namespace belfry {
namespace {

prometheus::Family<prometheus::Counter>& Reports(prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("belfry_execution_reports_total")
      .Help("Execution reports consumed, by result (stored: new and stored; rejected: sent to the "
            "executions DLQ). Repeats of a stored report count as neither.")
      .Register(registry);
}

prometheus::Family<prometheus::Counter>& Retries(prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("belfry_retries_total")
      .Help("Retries of failed executions, by event (scheduled; superseded: dropped by a newer "
            "success; too_late: not scheduled, due more than max_catchup ago).")
      .Register(registry);
}

}  // namespace

ExecutionMetrics::ExecutionMetrics(prometheus::Registry& registry)
    : stored_(Reports(registry).Add({{"result", "stored"}})),
      rejected_(Reports(registry).Add({{"result", "rejected"}})),
      scheduled_(Retries(registry).Add({{"event", "scheduled"}})),
      superseded_(Retries(registry).Add({{"event", "superseded"}})),
      too_late_(Retries(registry).Add({{"event", "too_late"}})) {}

void ExecutionMetrics::OnBatch(uint64_t rejected, const ExecutionApplyResult& applied) {
  stored_.Increment(static_cast<double>(applied.stored));
  rejected_.Increment(static_cast<double>(rejected));
  scheduled_.Increment(static_cast<double>(applied.retries_scheduled));
  superseded_.Increment(static_cast<double>(applied.retries_superseded));
  too_late_.Increment(static_cast<double>(applied.retries_too_late));
}

}  // namespace belfry
