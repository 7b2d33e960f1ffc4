// CommandConsumer: reads the commands topic in batches, applies each batch to the CommandStore in
// one transaction, publishes rejections to the DLQ and outcomes to the results topic, and only
// once those are acknowledged commits the batch's offsets (at-least-once; the store makes
// replays idempotent). Batches are pipelined: the next one is applied while the previous ones'
// records are in flight, and offsets are committed in apply order (core/commit_queue.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "belfry/config.h"
#include "belfry/command_store.h"
#include "belfry/status.h"
#include "belfry/stop_signal.h"
#include "core/command_parser.h"

namespace belfry {

// What one committed batch did. Handed to CommandConsumerOptions::on_batch.
struct CommandBatchReport {
  uint64_t size = 0;                                   // messages in the batch
  std::map<std::string, uint64_t> applied_by_op;       // "upsert" -> n, ...
  std::map<std::string, uint64_t> rejected_by_reason;  // Status::reason() -> n
  int64_t apply_latency_ms = 0;                        // ApplyActions, retries and backoff included
  int32_t apply_attempts = 0;                          // 0 when the batch had no valid command
};

// Wall time the Run thread spent in each stage of the consumer loop, in microseconds, summed
// since construction. Gather includes waiting for input; publish is the time spent settling
// batches (serving delivery reports, waiting for outcome and DLQ acknowledgements, retries),
// which includes the offset commits made meanwhile; commit is those offset commits alone.
struct CommandStageTimes {
  int64_t gather_us = 0;
  int64_t prepare_us = 0;
  int64_t apply_us = 0;
  int64_t publish_us = 0;
  int64_t commit_us = 0;
};

// Totals since construction.
struct CommandConsumerStats {
  uint64_t batches_total = 0;
  uint64_t commands_applied_total = 0;
  uint64_t commands_rejected_total = 0;
  uint64_t apply_retries_total = 0;    // failed ApplyActions attempts
  uint64_t publish_retries_total = 0;  // failed DLQ/results publication rounds
  uint64_t last_batch_size = 0;
  int64_t last_apply_latency_ms = 0;
  // Sum over the assigned partitions of (high watermark - consumer position), refreshed every
  // lag_refresh_ms; -1 until known.
  int64_t consumer_lag = -1;
  std::map<std::string, uint64_t> applied_by_op;
  std::map<std::string, uint64_t> rejected_by_reason;
  uint64_t messages_total = 0;  // messages in committed batches
  // Batches whose records are all acknowledged but whose offsets wait behind an earlier batch
  // that is not (offsets are committed in apply order), as of the last commit round.
  uint64_t batches_waiting_to_commit = 0;
  CommandStageTimes stage_times;
};

struct CommandConsumerOptions {
  std::string client_id = "belfry-commands";
  // Backoff between failed ApplyActions attempts / publication rounds (core/backoff.h): the
  // ceiling doubles from initial to max, the wait is drawn from its upper half.
  int64_t retry_initial_ms = 100;
  int64_t retry_max_ms = 5000;
  // Seeds the back-off's jitter; random by default, so that nodes do not retry in lockstep.
  uint64_t backoff_seed = std::random_device{}();
  // message.timeout.ms of the DLQ/results producer.
  int64_t publish_timeout_ms = 30000;
  int64_t lag_refresh_ms = 5000;
  // Pipelining: how many applied batches may still await their DLQ/results acknowledgements
  // while the next batch is gathered and applied. Their offsets are committed in apply order.
  int32_t max_unsettled_batches = 4;
  // Called on the Run thread after each committed batch (e.g. to feed Prometheus counters).
  std::function<void(const CommandBatchReport&)> on_batch;
  // group.instance.id (GroupInstanceId): a static member, whose restart takes its partitions back
  // at once after a kill; empty for dynamic membership. It leaves the group on a clean shutdown.
  std::string group_instance_id;
};

class CommandConsumer final {
 public:
  class Impl;

  // Creates the consumer (group config.group_id, subscribed to config.commands_topic) and its
  // DLQ/results producer. REQUIRES: `store` and rules.topic_policy outlive the consumer.
  static StatusOr<std::unique_ptr<CommandConsumer>> Create(const KafkaConfig& config, CommandStore& store,
                                                           CommandRules rules,
                                                           CommandConsumerOptions options = {});
  // Leaves the group (close()) and flushes the producer.
  ~CommandConsumer();
  CommandConsumer(const CommandConsumer&) = delete;
  CommandConsumer& operator=(const CommandConsumer&) = delete;

  // Consumes until `stop` is requested, then leaves the group. A batch interrupted by stop is
  // not committed; whoever owns its partitions next re-applies it. Never returns early for bad
  // input or broker faults. REQUIRES: called at most once.
  void Run(StopSignal& stop);

  // Thread-safe snapshot.
  CommandConsumerStats Stats() const;

 private:
  explicit CommandConsumer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace belfry
