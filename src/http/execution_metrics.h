// ExecutionMetrics: Prometheus counters of the execution-outcome consumer and the retries it
// schedules (docs/executions.md, docs/operations.md).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <map>
#include <string>

#include "belfry/execution.h"

namespace belfry {

class ExecutionMetrics final {
 public:
  // Registers the counters in `registry`, which must outlive this object.
  explicit ExecutionMetrics(prometheus::Registry& registry);
  ExecutionMetrics(const ExecutionMetrics&) = delete;
  ExecutionMetrics& operator=(const ExecutionMetrics&) = delete;

  // One committed batch of reports. Thread-safe.
  void OnBatch(uint64_t rejected, const ExecutionApplyResult& applied);

 private:
  prometheus::Counter& stored_;
  prometheus::Counter& rejected_;
  prometheus::Counter& scheduled_;
  prometheus::Counter& superseded_;
  prometheus::Counter& too_late_;
};

}  // namespace belfry
