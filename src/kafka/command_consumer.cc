#include "kafka/command_consumer.h"

#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/batch_bisection.h"
#include "core/command_batch.h"
#include "kafka/batch_consumer.h"
#include "kafka/batch_publication.h"

namespace belfry {
namespace {

using SteadyClock = std::chrono::steady_clock;
using MessagePtr = BatchConsumer::MessagePtr;

constexpr char kActorHeader[] = "belfry-actor";  // RawCommand::actor_header
constexpr char kReasonHeader[] = "belfry-reason";

RawCommand ToRawCommand(const RdKafka::Message& m) {
  RawCommand raw;
  if (m.key_pointer() != nullptr) raw.key.emplace(static_cast<const char*>(m.key_pointer()), m.key_len());
  if (m.payload() != nullptr) raw.value.emplace(static_cast<const char*>(m.payload()), m.len());
  raw.source.partition = m.partition();
  raw.source.offset = m.offset();
  raw.source.timestamp_ms = m.timestamp().timestamp;
  if (const RdKafka::Headers* headers = const_cast<RdKafka::Message&>(m).headers(); headers != nullptr) {
    for (const RdKafka::Headers::Header& h : headers->get_all()) {
      std::string* note = h.key() == kActorHeader ? &raw.actor_header : h.key() == kReasonHeader ? &raw.reason_header : nullptr;
      if (note != nullptr && h.value() != nullptr) note->assign(static_cast<const char*>(h.value()), h.value_size());
    }
  }
  return raw;
}

int64_t MicrosSince(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start).count();
}

// Applies items [first, last) of `items` with `apply` (one store call answering one result per
// item) and, on success, puts its results at (*results)[first..last).
template <typename Item, typename Result, typename Apply>
Status ApplyCollecting(const std::vector<Item>& items, size_t first, size_t last, const Apply& apply,
                       std::vector<Result>* results) {
  StatusOr<std::vector<Result>> r =
      first == 0 && last == items.size()
          ? apply(items)
          : apply(std::vector<Item>(items.begin() + static_cast<ptrdiff_t>(first),
                                    items.begin() + static_cast<ptrdiff_t>(last)));
  if (!r.ok()) return r.status();
  for (size_t i = 0; i < r->size() && first + i < last; ++i) (*results)[first + i] = std::move((*r)[i]);
  return Status::Ok();
}

}  // namespace

// The command-specific half of the consumer: what a batch of commands does to the CommandStore, the
// records it publishes (DLQ, outcomes) and what it counts. BatchConsumer does the rest.
class CommandConsumer::Impl {
 public:
  Impl(const KafkaConfig& config, CommandStore& store, CommandRules rules, CommandConsumerOptions options)
      : config_(config), store_(store), rules_(std::move(rules)), options_(std::move(options)) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status Init() {
    BatchConsumerOptions o;
    o.client_id = options_.client_id;
    o.producer_suffix = "-producer";
    o.topic = config_.commands_topic;
    o.consumer_settings = {
        {"group.id", config_.group_id},        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"}, {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "false"},     {"isolation.level", "read_committed"},
    };
    o.group_instance_id = options_.group_instance_id;
    o.batch_max = static_cast<size_t>(std::max<int32_t>(1, config_.command_batch_max));
    o.batch_wait_ms = config_.command_batch_wait_ms;
    o.max_unsettled_batches = static_cast<size_t>(std::max<int32_t>(1, options_.max_unsettled_batches));
    o.retry = BackoffPolicy{options_.retry_initial_ms, options_.retry_max_ms};
    o.backoff_seed = options_.backoff_seed;
    o.publish_timeout_ms = options_.publish_timeout_ms;
    o.lag_refresh_ms = options_.lag_refresh_ms;
    o.records_name = "DLQ/results";
    o.store_name = "job store";
    StatusOr<std::unique_ptr<BatchConsumer>> consumer = BatchConsumer::Create(config_, std::move(o));
    if (!consumer.ok()) return consumer.status();
    consumer_ = std::move(consumer.value());
    return Status::Ok();
  }

  void Run(StopSignal& stop) {
    consumer_->Run(stop, [this](const std::vector<MessagePtr>& batch, StopSignal& s) { return ApplyBatch(batch, s); });
  }

  CommandConsumerStats Stats() const {
    CommandConsumerStats stats;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats = stats_;
    }
    const BatchConsumerStats b = consumer_->Stats();
    stats.apply_retries_total = b.apply_retries_total;
    stats.publish_retries_total = b.publish_retries_total;
    stats.consumer_lag = b.consumer_lag;
    stats.batches_waiting_to_commit = b.batches_waiting_to_commit;
    stats.stage_times = CommandStageTimes{b.stage_times.gather_us, b.stage_times.prepare_us, b.stage_times.apply_us,
                                          b.stage_times.publish_us, b.stage_times.commit_us};
    return stats;
  }

 private:
  // Prepares the batch (PrepareCommandBatch) and applies it in three store calls, each isolating
  // what the store refuses for good (a poison command): the rest applies, the culprit is rejected
  // with store_error (docs/reliability.md). nullopt iff stop was requested first.
  std::optional<BatchConsumer::Applied> ApplyBatch(const std::vector<MessagePtr>& batch, StopSignal& stop) {
    const auto prepare_start = SteadyClock::now();
    std::vector<RawCommand> raws;
    raws.reserve(batch.size());
    for (const MessagePtr& m : batch) raws.push_back(ToRawCommand(*m));
    PreparedCommandBatch prepared = PrepareCommandBatch(raws, rules_);
    consumer_->AddStageTime(&BatchStageTimes::prepare_us, MicrosSince(prepare_start));

    const auto apply_start = SteadyClock::now();
    int32_t attempts = 0;
    std::optional<std::vector<RefusedItem>> refused_actions = consumer_->ApplyIsolating(
        "job actions", prepared.actions.size(),
        [&](size_t first, size_t last) {
          if (first == 0 && last == prepared.actions.size()) return store_.ApplyActions(prepared.actions);
          return store_.ApplyActions(
              std::vector<JobAction>(prepared.actions.begin() + first, prepared.actions.begin() + last));
        },
        stop, &attempts);
    if (!refused_actions) return std::nullopt;
    // Triggers and backfills, after the job actions: they fire the jobs as the batch left them.
    // Their own transaction, idempotent like the first (docs/manual-fires.md), so a crash between
    // the two replays both.
    std::vector<ManualFireResult> manual_results(prepared.manual.size(), ManualFireResult{Status::Ok(), 0, 0});
    std::optional<std::vector<RefusedItem>> refused_manual = consumer_->ApplyIsolating(
        "triggers and backfills", prepared.manual.size(),
        [&](size_t first, size_t last) {
          return ApplyCollecting<ManualFire, ManualFireResult>(
              prepared.manual, first, last, [&](const auto& fires) { return store_.ApplyManualFires(fires); },
              &manual_results);
        },
        stop, &attempts);
    if (!refused_manual) return std::nullopt;
    RecordManualFireResults(manual_results, &prepared);
    // Bulk commands are only recorded here; BulkOpRunner walks their jobs off this partition.
    std::vector<Status> bulk_results(prepared.bulk.size(), Status::Ok());
    std::optional<std::vector<RefusedItem>> refused_bulk = consumer_->ApplyIsolating(
        "bulk operations", prepared.bulk.size(),
        [&](size_t first, size_t last) {
          return ApplyCollecting<BulkOp, Status>(
              prepared.bulk, first, last, [&](const auto& ops) { return store_.AcceptBulkOps(ops); },
              &bulk_results);
        },
        stop, &attempts);
    if (!refused_bulk) return std::nullopt;
    RecordBulkAcceptResults(bulk_results, &prepared);
    for (const RefusedItem& r : *refused_actions) RefuseInStore(ActionCommandIndices(prepared, r.index), r.status, &prepared);
    for (const RefusedItem& r : *refused_manual) RefuseInStore({prepared.manual_outcomes.at(r.index)}, r.status, &prepared);
    for (const RefusedItem& r : *refused_bulk) RefuseInStore({prepared.bulk_outcomes.at(r.index)}, r.status, &prepared);
    const int64_t apply_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - apply_start).count();
    consumer_->AddStageTime(&BatchStageTimes::apply_us, MicrosSince(apply_start));

    CommandBatchReport report;
    report.size = batch.size();
    report.apply_latency_ms = apply_ms;
    report.apply_attempts = attempts;
    for (const CommandOutcome& o : prepared.outcomes) {
      if (o.applied) ++report.applied_by_op[o.op];
    }
    for (const CommandRejection& r : prepared.rejections) ++report.rejected_by_reason[r.status.reason()];
    for (const CommandRejection& r : prepared.store_refusals) ++report.rejected_by_reason[r.status.reason()];
    for (const ManualFireResult& r : manual_results) {
      if (!r.status.ok()) ++report.rejected_by_reason[r.status.reason()];
    }
    for (const Status& r : bulk_results) {
      if (!r.ok()) ++report.rejected_by_reason[r.reason()];
    }

    BatchConsumer::Applied applied;
    applied.records = BuildRecords(batch, prepared);
    applied.on_committed = [this, report = std::move(report)] { OnCommitted(report); };
    return applied;
  }

  // Rejections and store refusals to the DLQ, outcomes to the results topic.
  std::vector<OutgoingRecord> BuildRecords(const std::vector<MessagePtr>& batch,
                                           const PreparedCommandBatch& prepared) const {
    std::vector<OutgoingRecord> records;
    records.reserve(prepared.rejections.size() + prepared.store_refusals.size() + prepared.outcomes.size());
    for (const std::vector<CommandRejection>* list : {&prepared.rejections, &prepared.store_refusals}) {
      for (const CommandRejection& r : *list) {
        records.push_back(DlqRecord(*batch.at(r.index), &config_.dlq_topic, r.status));
      }
    }
    for (const CommandOutcome& o : prepared.outcomes) {
      if (o.id.empty() || o.deferred) continue;
      OutgoingRecord rec;
      rec.topic = &config_.results_topic;
      rec.key = o.id;
      rec.value = EncodeCommandOutcome(o);
      records.push_back(std::move(rec));
    }
    return records;
  }

  // On the Run thread, once the batch's offsets are committed.
  void OnCommitted(const CommandBatchReport& report) {
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.batches_total;
      stats_.messages_total += report.size;
      stats_.last_batch_size = report.size;
      stats_.last_apply_latency_ms = report.apply_latency_ms;
      for (const auto& [op, n] : report.applied_by_op) {
        stats_.applied_by_op[op] += n;
        stats_.commands_applied_total += n;
      }
      for (const auto& [reason, n] : report.rejected_by_reason) {
        stats_.rejected_by_reason[reason] += n;
        stats_.commands_rejected_total += n;
      }
    }
    if (options_.on_batch) options_.on_batch(report);
  }

  const KafkaConfig config_;
  CommandStore& store_;
  const CommandRules rules_;
  const CommandConsumerOptions options_;
  std::unique_ptr<BatchConsumer> consumer_;

  mutable std::mutex stats_mu_;
  // The per-batch counts; the rest of CommandConsumerStats is BatchConsumer's. Guarded by stats_mu_.
  CommandConsumerStats stats_;
};

StatusOr<std::unique_ptr<CommandConsumer>> CommandConsumer::Create(const KafkaConfig& config, CommandStore& store,
                                                                   CommandRules rules,
                                                                   CommandConsumerOptions options) {
  if (rules.topic_policy == nullptr) {
    return Status::FailedPrecondition("CommandConsumer: CommandRules::topic_policy is required");
  }
  auto impl = std::make_unique<Impl>(config, store, std::move(rules), std::move(options));
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<CommandConsumer>(new CommandConsumer(std::move(impl)));
}

CommandConsumer::CommandConsumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CommandConsumer::~CommandConsumer() = default;

void CommandConsumer::Run(StopSignal& stop) { impl_->Run(stop); }

CommandConsumerStats CommandConsumer::Stats() const { return impl_->Stats(); }

}  // namespace belfry
