// StandbyMetrics: where the tick queries were read, when a hot standby is configured
// (docs/hot-standby.md, docs/operations.md).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "core/standby_fence.h"

namespace belfry {

class StandbyMetrics final {
 public:
  // Registers the series in `registry`, which must outlive this object.
  explicit StandbyMetrics(prometheus::Registry& registry);
  StandbyMetrics(const StandbyMetrics&) = delete;
  StandbyMetrics& operator=(const StandbyMetrics&) = delete;

  // One tick query's route. Thread-safe.
  void OnRoute(const DueQueryRoute& route);

 private:
  prometheus::Counter& on_standby_;
  prometheus::Counter& on_primary_;
  prometheus::Counter& behind_;
  prometheus::Counter& unavailable_;
  prometheus::Counter& failed_;
  prometheus::Counter& no_fence_;
  prometheus::Counter& waited_;
  prometheus::Gauge& lag_;
};

}  // namespace belfry
