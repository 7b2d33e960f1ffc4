// ExecutionConsumer: reads the executions topic (its own consumer group) in batches, stores each
// batch through the ExecutionStore in one transaction, sends bad reports to the executions DLQ,
// and only then commits the batch's offsets. Off the trigger path. See docs/executions.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "belfry/config.h"
#include "belfry/execution.h"
#include "belfry/status.h"
#include "belfry/stop_signal.h"
#include "core/execution_report.h"

namespace belfry {

struct ExecutionBatchReport {
  uint64_t size = 0;
  uint64_t stored = 0;                                 // valid reports handed to the store
  std::map<std::string, uint64_t> rejected_by_reason;  // Status::reason() -> n
  ExecutionApplyResult applied;                        // what the store did with the valid ones
};

struct ExecutionConsumerOptions {
  std::string client_id = "belfry-executions";
  int32_t batch_max = 5000;
  int64_t batch_wait_ms = 50;
  // Backoff between failed store / DLQ attempts (core/backoff.h): the ceiling doubles from
  // initial to max, the wait is drawn from its upper half.
  int64_t retry_initial_ms = 100;
  int64_t retry_max_ms = 5000;
  // Seeds the back-off's jitter; random by default, so that nodes do not retry in lockstep.
  uint64_t backoff_seed = std::random_device{}();
  int64_t publish_timeout_ms = 30000;
  std::function<void(const ExecutionBatchReport&)> on_batch;  // on the Run thread
  // group.instance.id (GroupInstanceId): a static member, whose restart takes its partitions back
  // at once after a kill; empty for dynamic membership. It leaves the group on a clean shutdown.
  std::string group_instance_id;
};

// Totals since construction.
struct ExecutionConsumerStats {
  uint64_t batches_total = 0;      // batches stored and committed
  uint64_t retries_total = 0;      // failed store / DLQ attempts
  uint64_t assignments_total = 0;  // partition assignments received from the group
  uint64_t revocations_total = 0;  // revoked or lost assignments (an eviction, close())
};

class ExecutionConsumer final {
 public:
  class Impl;
  // Subscribes group config.executions_group_id to config.executions_topic.
  // REQUIRES: `store` outlives the consumer.
  static StatusOr<std::unique_ptr<ExecutionConsumer>> Create(const KafkaConfig& config, ExecutionStore& store,
                                                             ExecutionRules rules,
                                                             ExecutionConsumerOptions options = {});
  ~ExecutionConsumer();
  ExecutionConsumer(const ExecutionConsumer&) = delete;
  ExecutionConsumer& operator=(const ExecutionConsumer&) = delete;

  // Consumes until `stop` is requested. A batch interrupted by stop is not committed (it is
  // re-read and re-stored idempotently). REQUIRES: called at most once.
  void Run(StopSignal& stop);

  // Thread-safe snapshot.
  ExecutionConsumerStats Stats() const;

 private:
  explicit ExecutionConsumer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace belfry
