// ChangeMetrics: Prometheus counters of the audit trail's change publisher (docs/audit-trail.md,
// docs/operations.md).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <cstdint>

namespace belfry {

class ChangeMetrics final {
 public:
  // Registers the counters in `registry`, which must outlive this object.
  explicit ChangeMetrics(prometheus::Registry& registry);
  ChangeMetrics(const ChangeMetrics&) = delete;
  ChangeMetrics& operator=(const ChangeMetrics&) = delete;

  // One publish round: events acknowledged and marked published, and events of a round that
  // failed (they are published again by a later round). Thread-safe.
  void OnRound(int64_t published, int64_t failed);

 private:
  prometheus::Counter& published_;
  prometheus::Counter& failed_;
};

}  // namespace belfry
