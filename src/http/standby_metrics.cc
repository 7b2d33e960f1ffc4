#include "http/standby_metrics.h"

namespace belfry {
namespace {

prometheus::Family<prometheus::Counter>& Queries(prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("belfry_tick_queries_total")
      .Help("Tick queries (one per shard-minute, or per coalesced catch-up range) by the server that "
            "answered: standby, or primary. Only counted when standby.url is set.")
      .Register(registry);
}

prometheus::Family<prometheus::Counter>& Fallbacks(prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("belfry_standby_fallbacks_total")
      .Help("Tick queries the primary answered instead of the standby, by reason: behind (the standby had "
            "not replayed the claim's WAL position within standby.max_wait), unavailable (it could not be "
            "reached, or failed within standby.retry_after), failed (the query failed on it), no_fence.")
      .Register(registry);
}

}  // namespace

StandbyMetrics::StandbyMetrics(prometheus::Registry& registry)
    : on_standby_(Queries(registry).Add({{"server", "standby"}})),
      on_primary_(Queries(registry).Add({{"server", "primary"}})),
      behind_(Fallbacks(registry).Add({{"reason", "behind"}})),
      unavailable_(Fallbacks(registry).Add({{"reason", "unavailable"}})),
      failed_(Fallbacks(registry).Add({{"reason", "failed"}})),
      no_fence_(Fallbacks(registry).Add({{"reason", "no_fence"}})),
      waited_(prometheus::BuildCounter()
                  .Name("belfry_standby_wait_seconds_total")
                  .Help("Time tick queries spent waiting for the standby to replay their claim's WAL position.")
                  .Register(registry)
                  .Add({})),
      lag_(prometheus::BuildGauge()
               .Name("belfry_standby_lag_bytes")
               .Help("How far the standby's replay was behind the claim's WAL position when the last tick "
                     "query asked it (0: caught up).")
               .Register(registry)
               .Add({})) {}

void StandbyMetrics::OnRoute(const DueQueryRoute& route) {
  const bool standby = route.server == DueQueryRoute::Server::kStandby;
  (standby ? on_standby_ : on_primary_).Increment();
  if (!standby) {
    switch (route.reason) {
      case DueQueryRoute::Reason::kBehind:
        behind_.Increment();
        break;
      case DueQueryRoute::Reason::kUnavailable:
        unavailable_.Increment();
        break;
      case DueQueryRoute::Reason::kFailed:
        failed_.Increment();
        break;
      case DueQueryRoute::Reason::kNoFence:
        no_fence_.Increment();
        break;
      case DueQueryRoute::Reason::kNone:
        break;
    }
  }
  waited_.Increment(static_cast<double>(route.waited_ms) / 1000.0);
  if (route.reason != DueQueryRoute::Reason::kUnavailable && route.reason != DueQueryRoute::Reason::kNoFence) {
    lag_.Set(static_cast<double>(route.lag_bytes));
  }
}

}  // namespace belfry
