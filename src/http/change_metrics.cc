#include "http/change_metrics.h"

namespace belfry {
namespace {

prometheus::Family<prometheus::Counter>& Events(prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("belfry_change_events_total")
      .Help("Audit trail change events, by result (published: acknowledged by the changes topic's "
            "broker and marked published; failed: in a round that failed, to be published again).")
      .Register(registry);
}

}  // namespace

ChangeMetrics::ChangeMetrics(prometheus::Registry& registry)
    : published_(Events(registry).Add({{"result", "published"}})),
      failed_(Events(registry).Add({{"result", "failed"}})) {}

void ChangeMetrics::OnRound(int64_t published, int64_t failed) {
  published_.Increment(static_cast<double>(published));
  failed_.Increment(static_cast<double>(failed));
}

}  // namespace belfry
