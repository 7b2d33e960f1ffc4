// BatchConsumer: the consumer loop shared by the command and the execution consumer. It is a
// member of a consumer group on one topic and, until stopped, gathers a batch from the poll, has
// the caller apply it to its store, publishes the records the caller returns (DLQ records,
// outcomes) through its own idempotent producer, and commits the batch's offsets once they are
// all acknowledged. Batches are pipelined: the next one is gathered and applied while earlier
// ones' records are in flight, and offsets are committed in apply order (core/commit_queue.h).
// Store faults and failed records are retried with a backoff while the group membership is kept
// (GroupMembership). At-least-once: a batch interrupted by stop is not committed, and whoever
// owns its partitions next applies it again; the stores make that idempotent. Private to
// src/kafka.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/config.h"
#include "belfry/status.h"
#include "belfry/stop_signal.h"
#include "core/backoff.h"
#include "core/batch_bisection.h"
#include "core/commit_queue.h"
#include "kafka/batch_publication.h"
#include "kafka/group_membership.h"
#include "kafka/kafka_client_config.h"

namespace belfry {

struct BatchConsumerOptions {
  std::string client_id;                    // of the consumer, and the prefix of every log line
  std::string producer_suffix = "-producer";  // the producer's client.id is client_id + this
  std::string topic;                        // the topic consumed
  // The consumer's settings (group.id and the rest); group.instance.id (when set) and
  // ConsumerFetchSettings() are appended.
  KafkaSettings consumer_settings;
  // group.instance.id (GroupInstanceId); empty for dynamic membership.
  std::string group_instance_id;
  size_t batch_max = 5000;     // at most this many messages per batch (BatchIsReady)
  int64_t batch_wait_ms = 50;  // gathering for at most this long after the first message
  // How many applied batches may still await their records' acknowledgements while the next
  // batch is gathered and applied.
  size_t max_unsettled_batches = 4;
  // Between failed store attempts and between publication rounds of a batch.
  BackoffPolicy retry;
  uint64_t backoff_seed = 0;
  int64_t publish_timeout_ms = 30000;  // message.timeout.ms of the producer
  int64_t lag_refresh_ms = 5000;
  // In log lines: what the records are, and whose store applies the batches.
  std::string records_name = "DLQ/results";
  std::string store_name = "store";
};

// Wall time the Run thread spent in each stage, in microseconds, summed since construction.
// Gather includes waiting for input; publish is the time spent settling batches (serving
// delivery reports, waiting for acknowledgements, retries), which includes the offset commits
// made meanwhile; commit is those offset commits alone. Prepare and apply are the caller's
// (AddStageTime).
struct BatchStageTimes {
  int64_t gather_us = 0;
  int64_t prepare_us = 0;
  int64_t apply_us = 0;
  int64_t publish_us = 0;
  int64_t commit_us = 0;
};

// Totals since construction.
struct BatchConsumerStats {
  uint64_t apply_retries_total = 0;    // failed store attempts (ApplyIsolating)
  uint64_t publish_retries_total = 0;  // failed publication rounds
  // Sum over the assigned partitions of (high watermark - consumer position), refreshed every
  // lag_refresh_ms; -1 until known.
  int64_t consumer_lag = -1;
  // Batches whose records are all acknowledged but whose offsets wait behind an earlier batch
  // that is not, as of the last commit round.
  uint64_t batches_waiting_to_commit = 0;
  uint64_t assignments_total = 0;  // partition assignments received from the group
  uint64_t revocations_total = 0;  // revoked or lost assignments (an eviction, close())
  BatchStageTimes stage_times;
};

class BatchConsumer final {
 public:
  using MessagePtr = std::unique_ptr<RdKafka::Message>;

  // What the caller made of one batch.
  struct Applied {
    std::vector<OutgoingRecord> records;  // to publish before the batch's offsets are committed
    // Called on the Run thread once the batch's offsets are committed (not for a batch dropped
    // at stop).
    std::function<void()> on_committed;
  };
  // Applies `batch` to the store, each transaction through ApplyIsolating. Returns nullopt iff
  // stop was requested before the store answered: nothing of the batch is then published or
  // committed.
  using ApplyBatch = std::function<std::optional<Applied>(const std::vector<MessagePtr>& batch, StopSignal& stop)>;

  // Creates the consumer (subscribed to options.topic) and its producer.
  static StatusOr<std::unique_ptr<BatchConsumer>> Create(const KafkaConfig& config, BatchConsumerOptions options);
  // Leaves the group (close()) and flushes the producer.
  ~BatchConsumer();
  BatchConsumer(const BatchConsumer&) = delete;
  BatchConsumer& operator=(const BatchConsumer&) = delete;

  // Consumes until `stop` is requested, then commits what is settled, drops the batches still
  // awaiting acknowledgements (uncommitted) and leaves the group. Never returns early for bad
  // input or broker faults. REQUIRES: called at most once.
  void Run(StopSignal& stop, const ApplyBatch& apply);

  // For ApplyBatch, on the Run thread. Applies `count` items with `apply_range(first, last)` (one
  // store transaction each), isolating the items the store refuses for good
  // (ApplyIsolatingRefusals); every other fault is retried with a backoff, the group membership
  // kept, and an exception from the store counts as a retryable fault. `what` names the items
  // in logs; every attempt adds 1 to *attempts. Returns the refused items, or nullopt iff stop
  // was requested first.
  std::optional<std::vector<RefusedItem>> ApplyIsolating(std::string_view what, size_t count,
                                                         const std::function<Status(size_t, size_t)>& apply_range,
                                                         StopSignal& stop, int32_t* attempts);

  // Adds `us` to one of stage_times (the caller's prepare_us and apply_us). Thread-safe.
  void AddStageTime(int64_t BatchStageTimes::*field, int64_t us);

  // Thread-safe snapshot.
  BatchConsumerStats Stats() const;

 private:
  using SteadyClock = std::chrono::steady_clock;

  class DeliveryReport final : public RdKafka::DeliveryReportCb {
   public:
    explicit DeliveryReport(BatchConsumer* consumer) : consumer_(consumer) {}
    void dr_cb(RdKafka::Message& message) override { consumer_->OnDelivered(message); }

   private:
    BatchConsumer* const consumer_;
  };

  BatchConsumer(const KafkaConfig& config, BatchConsumerOptions options);
  Status Init();
  StatusOr<std::unique_ptr<RdKafka::Producer>> NewProducer();
  void ReplaceProducerIfFatal();
  void OnDelivered(RdKafka::Message& m);

  std::vector<MessagePtr> Gather(StopSignal& stop);
  bool ProcessBatch(const std::vector<MessagePtr>& batch, const ApplyBatch& apply, StopSignal& stop);
  bool SettleAndCommit(StopSignal& stop, size_t max_unsettled);
  void CommitSettled();
  void RecordWaitingToCommit();
  void AbandonUnsettled();
  bool Republish(BatchPublication& p, StopSignal& stop);
  void Produce(BatchPublication& p, size_t index);
  void Commit(const CommitQueue::Offsets& next);
  std::optional<Status> ApplyUntilAnswered(std::string_view what, size_t count, const std::function<Status()>& apply,
                                           StopSignal& stop, int32_t* attempts);
  Status ApplyOnce(const std::function<Status()>& apply) const;
  void MaybeRefreshLag();
  void LogStageTimes();

  const KafkaConfig config_;
  const BatchConsumerOptions options_;
  // Callbacks outlive the clients (declared first, destroyed last).
  KafkaEventLogger event_logger_;
  KafkaEventLogger producer_logger_;
  GroupMembership membership_;  // the consumer's rebalance_cb
  DeliveryReport delivery_report_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::unique_ptr<RdKafka::Producer> producer_;

  // Run-thread state (the callbacks above run inside consume()/poll()/flush() on that thread).
  Backoff apply_backoff_;
  CommitQueue commit_queue_;                     // applied batches, in apply order, until committed
  std::deque<BatchPublication> publications_;    // records of unsettled batches, in apply order
  struct Pending {
    uint64_t size = 0;
    std::function<void()> on_committed;
  };
  std::map<uint64_t, Pending> pending_;  // by ticket, until committed
  SteadyClock::time_point last_lag_refresh_{};
  // For LogStageTimes: batches and messages committed, and the last snapshot it logged.
  uint64_t batches_committed_ = 0;
  uint64_t messages_committed_ = 0;
  uint64_t logged_batches_ = 0;
  uint64_t logged_messages_ = 0;
  BatchStageTimes logged_stage_times_;

  mutable std::mutex stats_mu_;
  BatchConsumerStats stats_;  // guarded by stats_mu_
};

}  // namespace belfry
