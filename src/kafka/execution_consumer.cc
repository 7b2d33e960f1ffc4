#include "kafka/execution_consumer.h"

#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "core/batch_bisection.h"
#include "kafka/batch_consumer.h"
#include "kafka/batch_publication.h"

namespace belfry {
namespace {

using SteadyClock = std::chrono::steady_clock;
using MessagePtr = BatchConsumer::MessagePtr;

int64_t MicrosSince(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start).count();
}

RawExecution ToRawExecution(const RdKafka::Message& m) {
  RawExecution raw;
  if (m.key_pointer() != nullptr) raw.key.emplace(static_cast<const char*>(m.key_pointer()), m.key_len());
  if (m.payload() != nullptr) raw.value.emplace(static_cast<const char*>(m.payload()), m.len());
  raw.source = SourcePosition{m.partition(), m.offset(), m.timestamp().timestamp};
  return raw;
}

}  // namespace

// The execution-specific half of the consumer: what a batch of reports does to the
// ExecutionStore, the DLQ records of the bad ones, and what it counts. BatchConsumer does the
// rest.
class ExecutionConsumer::Impl {
 public:
  Impl(const KafkaConfig& config, ExecutionStore& store, ExecutionRules rules, ExecutionConsumerOptions options)
      : config_(config), store_(store), rules_(rules), options_(std::move(options)) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status Init() {
    BatchConsumerOptions o;
    o.client_id = options_.client_id;
    o.producer_suffix = "-dlq";
    o.topic = config_.executions_topic;
    o.consumer_settings = {
        {"group.id", config_.executions_group_id},
        {"enable.auto.commit", "false"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "false"},
    };
    o.group_instance_id = options_.group_instance_id;
    o.batch_max = static_cast<size_t>(std::max<int32_t>(1, options_.batch_max));
    o.batch_wait_ms = options_.batch_wait_ms;
    // One batch's DLQ records in flight while the next batch is gathered and stored.
    o.max_unsettled_batches = 1;
    o.retry = BackoffPolicy{options_.retry_initial_ms, options_.retry_max_ms};
    o.backoff_seed = options_.backoff_seed;
    o.publish_timeout_ms = options_.publish_timeout_ms;
    o.records_name = "executions DLQ";
    o.store_name = "execution store";
    StatusOr<std::unique_ptr<BatchConsumer>> consumer = BatchConsumer::Create(config_, std::move(o));
    if (!consumer.ok()) return consumer.status();
    consumer_ = std::move(consumer.value());
    return Status::Ok();
  }

  void Run(StopSignal& stop) {
    consumer_->Run(stop, [this](const std::vector<MessagePtr>& batch, StopSignal& s) { return ApplyBatch(batch, s); });
  }

  ExecutionConsumerStats Stats() const {
    const BatchConsumerStats b = consumer_->Stats();
    ExecutionConsumerStats stats;
    stats.batches_total = batches_total_.load();
    stats.retries_total = b.apply_retries_total + b.publish_retries_total;
    stats.assignments_total = b.assignments_total;
    stats.revocations_total = b.revocations_total;
    return stats;
  }

 private:
  // Parses the reports (ParseExecutionReport) and stores the valid ones in one transaction,
  // isolating those the store refuses for good (a poison report, docs/reliability.md): they join
  // the batch's rejects (store_error), which go to the executions DLQ. nullopt iff stop was
  // requested first.
  std::optional<BatchConsumer::Applied> ApplyBatch(const std::vector<MessagePtr>& batch, StopSignal& stop) {
    const auto prepare_start = SteadyClock::now();
    ExecutionBatchReport report;
    report.size = batch.size();
    std::vector<ExecutionReport> valid;
    std::vector<const RdKafka::Message*> valid_messages;  // valid[i] came from valid_messages[i]
    std::vector<std::pair<const RdKafka::Message*, Status>> rejected;
    valid.reserve(batch.size());
    valid_messages.reserve(batch.size());
    for (const MessagePtr& m : batch) {
      StatusOr<ExecutionReport> r = ParseExecutionReport(ToRawExecution(*m), rules_);
      if (r.ok()) {
        valid.push_back(std::move(r.value()));
        valid_messages.push_back(m.get());
      } else {
        ++report.rejected_by_reason[r.status().reason()];
        rejected.emplace_back(m.get(), r.status());
      }
    }
    consumer_->AddStageTime(&BatchStageTimes::prepare_us, MicrosSince(prepare_start));

    const auto apply_start = SteadyClock::now();
    ExecutionApplyResult total;
    int32_t attempts = 0;
    std::optional<std::vector<RefusedItem>> refused = consumer_->ApplyIsolating(
        "execution reports", valid.size(),
        [&](size_t first, size_t last) {
          StatusOr<ExecutionApplyResult> applied =
              first == 0 && last == valid.size()
                  ? store_.ApplyReports(valid)
                  : store_.ApplyReports(std::vector<ExecutionReport>(valid.begin() + static_cast<ptrdiff_t>(first),
                                                                     valid.begin() + static_cast<ptrdiff_t>(last)));
          if (!applied.ok()) return applied.status();
          total.stored += applied->stored;
          total.retries_scheduled += applied->retries_scheduled;
          total.retries_superseded += applied->retries_superseded;
          total.retries_too_late += applied->retries_too_late;
          return Status::Ok();
        },
        stop, &attempts);
    if (!refused) return std::nullopt;
    for (const RefusedItem& item : *refused) {
      const Status status = Status::Invalid("store_error", item.status.message());
      ++report.rejected_by_reason[status.reason()];
      rejected.emplace_back(valid_messages[item.index], status);
    }
    report.stored = valid.size() - refused->size();
    report.applied = total;
    consumer_->AddStageTime(&BatchStageTimes::apply_us, MicrosSince(apply_start));

    BatchConsumer::Applied applied;
    applied.records.reserve(rejected.size());
    for (const auto& [m, status] : rejected) {
      applied.records.push_back(DlqRecord(*m, &config_.executions_dlq_topic, status));
    }
    applied.on_committed = [this, report = std::move(report)] {
      batches_total_.fetch_add(1);
      if (options_.on_batch) options_.on_batch(report);
    };
    return applied;
  }

  const KafkaConfig config_;
  ExecutionStore& store_;
  const ExecutionRules rules_;
  const ExecutionConsumerOptions options_;
  std::unique_ptr<BatchConsumer> consumer_;
  std::atomic<uint64_t> batches_total_{0};
};

StatusOr<std::unique_ptr<ExecutionConsumer>> ExecutionConsumer::Create(const KafkaConfig& config,
                                                                       ExecutionStore& store,
                                                                       ExecutionRules rules,
                                                                       ExecutionConsumerOptions options) {
  auto impl = std::make_unique<Impl>(config, store, rules, std::move(options));
  if (Status st = impl->Init(); !st.ok()) return st;
  return std::unique_ptr<ExecutionConsumer>(new ExecutionConsumer(std::move(impl)));
}

ExecutionConsumer::ExecutionConsumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExecutionConsumer::~ExecutionConsumer() = default;

void ExecutionConsumer::Run(StopSignal& stop) { impl_->Run(stop); }

ExecutionConsumerStats ExecutionConsumer::Stats() const { return impl_->Stats(); }

}  // namespace belfry
