#include "kafka/command_consumer.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/backoff.h"
#include "core/batch_bisection.h"
#include "core/command_batch.h"
#include "core/commit_queue.h"
#include "kafka/delivery_error.h"
#include "kafka/group_membership.h"
#include "kafka/kafka_client_config.h"
#include "kafka/ordered_messages.h"
#include "kafka/topic_partition_list.h"

namespace belfry {
namespace {

using SteadyClock = std::chrono::steady_clock;
using MessagePtr = std::unique_ptr<RdKafka::Message>;

// Delivery reports are matched to records by a (ticket, index) tag packed into the opaque.
static_assert(sizeof(void*) >= sizeof(uint64_t), "requires 64-bit pointers");

constexpr char kErrorHeader[] = "belfry-error";
constexpr char kSourcePartitionHeader[] = "belfry-source-partition";
constexpr char kSourceOffsetHeader[] = "belfry-source-offset";
constexpr char kValueDroppedHeader[] = "belfry-value-dropped";
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

struct Header {
  std::string key;
  std::optional<std::string> value;  // nullopt: a null header value
};

// One DLQ or results record, kept until the broker acknowledges it.
struct OutgoingRecord {
  const std::string* topic = nullptr;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<Header> headers;
  bool is_dlq = false;
};

std::vector<Header> CopyHeaders(const RdKafka::Message& m) {
  std::vector<Header> out;
  const RdKafka::Headers* headers = const_cast<RdKafka::Message&>(m).headers();
  if (headers == nullptr) return out;
  for (const RdKafka::Headers::Header& h : headers->get_all()) {
    Header copy{h.key(), std::nullopt};
    if (h.value() != nullptr) copy.value.emplace(static_cast<const char*>(h.value()), h.value_size());
    out.push_back(std::move(copy));
  }
  return out;
}

// One applied batch's DLQ/results records, kept until the broker has acknowledged every one.
struct Publication {
  uint64_t ticket = 0;  // the batch's CommitQueue ticket
  std::vector<OutgoingRecord> records;
  std::vector<RdKafka::ErrorCode> results;  // per record; ERR__IN_PROGRESS until reported
  size_t outstanding = 0;                   // records without a report yet
  int attempt = 1;
  Backoff backoff{BackoffPolicy{}, 0};
};

uint32_t TicketTag(uint64_t ticket) { return static_cast<uint32_t>(ticket & 0xffffffffu); }

using OrderedBatch = OrderedMessages<MessagePtr>;

int64_t MicrosSince(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start).count();
}

}  // namespace

class CommandConsumer::Impl {
 public:
  Impl(const KafkaConfig& config, JobStore& store, CommandRules rules, CommandConsumerOptions options)
      : config_(config),
        store_(store),
        rules_(std::move(rules)),
        options_(std::move(options)),
        event_logger_(options_.client_id),
        producer_logger_(options_.client_id + "-producer"),
        membership_(options_.client_id),
        delivery_report_(this),
        apply_backoff_(RetryPolicy(), options_.backoff_seed) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  ~Impl() {
    Close();
    if (producer_ != nullptr) {
      producer_->flush(5000);
      producer_->purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      producer_->poll(0);
    }
  }

  Status Init() {
    KafkaSettings consumer_settings = {
        {"group.id", config_.group_id},        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"}, {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "false"},     {"isolation.level", "read_committed"},
    };
    if (!options_.group_instance_id.empty()) {
      consumer_settings.emplace_back("group.instance.id", options_.group_instance_id);
    }
    consumer_settings.insert(consumer_settings.end(), ConsumerFetchSettings().begin(),
                             ConsumerFetchSettings().end());
    StatusOr<std::unique_ptr<RdKafka::Conf>> cconf =
        BuildKafkaConf(config_, options_.client_id, consumer_settings, &event_logger_);
    if (!cconf.ok()) return cconf.status();
    std::string errstr;
    if (cconf.value()->set("rebalance_cb", &membership_, errstr) != RdKafka::Conf::CONF_OK) {
      return Status::Invalid("kafka_config", "rebalance_cb: " + errstr);
    }
    consumer_.reset(RdKafka::KafkaConsumer::create(cconf.value().get(), errstr));
    if (consumer_ == nullptr) return Status::Invalid("kafka_config", "creating consumer: " + errstr);
    membership_.Attach(consumer_.get());

    StatusOr<std::unique_ptr<RdKafka::Producer>> producer = NewProducer();
    if (!producer.ok()) return producer.status();
    producer_ = std::move(producer.value());

    const RdKafka::ErrorCode err = consumer_->subscribe({config_.commands_topic});
    if (err != RdKafka::ERR_NO_ERROR) {
      return Status::Retryable("subscribing to '" + config_.commands_topic + "': " + RdKafka::err2str(err));
    }
    return Status::Ok();
  }

  StatusOr<std::unique_ptr<RdKafka::Producer>> NewProducer() {
    const KafkaSettings settings = {
        {"enable.idempotence", "true"},
        {"acks", "all"},
        {"linger.ms", "5"},
        {"message.timeout.ms", std::to_string(options_.publish_timeout_ms)},
    };
    StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
        BuildKafkaConf(config_, options_.client_id + "-producer", settings, &producer_logger_);
    if (!conf.ok()) return conf.status();
    std::string errstr;
    if (conf.value()->set("dr_cb", &delivery_report_, errstr) != RdKafka::Conf::CONF_OK) {
      return Status::Invalid("kafka_config", "dr_cb: " + errstr);
    }
    std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.value().get(), errstr));
    if (producer == nullptr) return Status::Invalid("kafka_config", "creating producer: " + errstr);
    return producer;
  }

  // An idempotent producer that hit a fatal error refuses everything; replace it.
  void ReplaceProducerIfFatal() {
    std::string reason;
    const RdKafka::ErrorCode err = producer_->fatal_error(reason);
    if (err == RdKafka::ERR_NO_ERROR) return;
    spdlog::error("kafka[{}]: DLQ/results producer fatal error {} ({}); replacing it", options_.client_id,
                  RdKafka::err2str(err), reason);
    StatusOr<std::unique_ptr<RdKafka::Producer>> fresh = NewProducer();
    if (!fresh.ok()) {
      spdlog::error("kafka[{}]: could not create a replacement producer: {}", options_.client_id,
                    fresh.status().ToString());
      return;
    }
    producer_->purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    producer_->flush(1000);  // reports of purged records mark them failed; Republish retries them
    producer_ = std::move(fresh.value());
  }

  void Run(StopSignal& stop) {
    spdlog::info("kafka[{}]: consuming '{}' as group '{}'", options_.client_id, config_.commands_topic,
                 config_.group_id);
    // Pipelined: batch N+1 is gathered and applied while batch N's DLQ/results records are still
    // being acknowledged. Offsets are committed in apply order, each batch's only after its
    // transaction committed and all of its records were acknowledged (CommitQueue).
    while (!stop.requested()) {
      const auto gather_start = SteadyClock::now();
      std::vector<MessagePtr> batch = Gather(stop);
      AddStageTime(&CommandStageTimes::gather_us, MicrosSince(gather_start));
      MaybeRefreshLag();
      if (stop.requested()) break;
      if (!batch.empty() && !ProcessBatch(batch, stop)) break;
      if (!SettleAndCommit(stop, MaxUnsettled())) break;
    }
    AbandonUnsettled();
    membership_.Resume();
    Close();
  }

  // Leaves the group, so that the partitions move to another member now rather than after the
  // session timeout (a static member too: GroupMembership::Close). Uncommitted work is
  // re-delivered to the next owner.
  void Close() { membership_.Close(); }

  CommandConsumerStats Stats() const {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }

 private:
  class DeliveryReport final : public RdKafka::DeliveryReportCb {
   public:
    explicit DeliveryReport(Impl* impl) : impl_(impl) {}
    void dr_cb(RdKafka::Message& message) override { impl_->OnDelivered(message); }

   private:
    Impl* const impl_;
  };

  void OnDelivered(RdKafka::Message& m) {
    const auto tag = reinterpret_cast<uintptr_t>(m.msg_opaque());
    const auto ticket_tag = static_cast<uint32_t>(static_cast<uint64_t>(tag) >> 32);
    const size_t index = tag & 0xffffffffu;
    for (Publication& p : publications_) {
      if (TicketTag(p.ticket) != ticket_tag) continue;
      if (index < p.results.size() && p.results[index] == RdKafka::ERR__IN_PROGRESS) {
        p.results[index] = m.err() == RdKafka::ERR__IN_PROGRESS ? RdKafka::ERR__FAIL : m.err();
        --p.outstanding;
      }
      return;
    }
  }

  // Consumes up to command_batch_max messages: waits (in 100 ms slices, for stop) for the first,
  // then takes what is already buffered, for at most command_batch_wait_ms (BatchIsReady).
  // While earlier batches await acknowledgements it waits in short slices and settles them.
  std::vector<MessagePtr> Gather(StopSignal& stop) {
    OrderedBatch batch = std::exchange(membership_.carryover(), OrderedBatch());
    const size_t max = static_cast<size_t>(std::max<int32_t>(1, config_.command_batch_max));
    const int64_t wait_ms = std::max<int64_t>(0, config_.command_batch_wait_ms);
    SteadyClock::time_point first_at = SteadyClock::now();
    bool drained = false;
    while (!stop.requested()) {
      const int64_t waited_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - first_at).count();
      if (BatchIsReady(batch.size(), max, waited_ms, wait_ms, drained)) break;
      int timeout_ms = 0;
      if (batch.empty()) {
        if (!commit_queue_.empty()) {
          if (!SettleAndCommit(stop, SIZE_MAX)) break;
        }
        timeout_ms = commit_queue_.empty() ? 100 : 2;
      }
      MessagePtr m(consumer_->consume(timeout_ms));
      if (m->err() == RdKafka::ERR__TIMED_OUT) {
        drained = true;
        continue;
      }
      if (m->err() != RdKafka::ERR_NO_ERROR) {
        membership_.LogConsumeError(*m);
        continue;
      }
      drained = false;
      if (batch.empty()) first_at = SteadyClock::now();
      batch.Append(std::move(m));
    }
    return batch.Take();
  }

  // Applies the batch and starts publishing its records. Returns false iff stop was requested
  // before the store accepted it (then nothing of it is published or committed).
  bool ProcessBatch(const std::vector<MessagePtr>& batch, StopSignal& stop) {
    const auto prepare_start = SteadyClock::now();
    std::vector<RawCommand> raws;
    raws.reserve(batch.size());
    for (const MessagePtr& m : batch) raws.push_back(ToRawCommand(*m));
    PreparedCommandBatch prepared = PrepareCommandBatch(raws, rules_);
    AddStageTime(&CommandStageTimes::prepare_us, MicrosSince(prepare_start));

    const auto apply_start = SteadyClock::now();
    int32_t attempts = 0;
    auto stopping = [&] {
      spdlog::info("kafka[{}]: stopping with an unapplied batch of {}; it stays uncommitted",
                   options_.client_id, batch.size());
      return false;
    };
    // Each of the three store calls isolates what the store refuses for good (a poison command):
    // the rest applies, the culprit is rejected with store_error (docs/reliability.md).
    std::optional<std::vector<RefusedItem>> refused_actions = ApplyIsolating(
        "job actions", prepared.actions.size(),
        [&](size_t first, size_t last) {
          if (first == 0 && last == prepared.actions.size()) return store_.ApplyActions(prepared.actions);
          return store_.ApplyActions(
              std::vector<JobAction>(prepared.actions.begin() + first, prepared.actions.begin() + last));
        },
        stop, &attempts);
    if (!refused_actions) return stopping();
    // Triggers and backfills, after the job actions: they fire the jobs as the batch left them.
    // Their own transaction, idempotent like the first (docs/manual-fires.md), so a crash between
    // the two replays both.
    std::vector<ManualFireResult> manual_results(prepared.manual.size(), ManualFireResult{Status::Ok(), 0, 0});
    std::optional<std::vector<RefusedItem>> refused_manual = ApplyIsolating(
        "triggers and backfills", prepared.manual.size(),
        [&](size_t first, size_t last) {
          return ApplyCollecting<ManualFire, ManualFireResult>(
              prepared.manual, first, last, [&](const auto& fires) { return store_.ApplyManualFires(fires); },
              &manual_results);
        },
        stop, &attempts);
    if (!refused_manual) return stopping();
    RecordManualFireResults(manual_results, &prepared);
    // Bulk commands are only recorded here; BulkOpRunner walks their jobs off this partition.
    std::vector<Status> bulk_results(prepared.bulk.size(), Status::Ok());
    std::optional<std::vector<RefusedItem>> refused_bulk = ApplyIsolating(
        "bulk operations", prepared.bulk.size(),
        [&](size_t first, size_t last) {
          return ApplyCollecting<BulkOp, Status>(
              prepared.bulk, first, last, [&](const auto& ops) { return store_.AcceptBulkOps(ops); },
              &bulk_results);
        },
        stop, &attempts);
    if (!refused_bulk) return stopping();
    RecordBulkAcceptResults(bulk_results, &prepared);
    for (const RefusedItem& r : *refused_actions) RefuseInStore(ActionCommandIndices(prepared, r.index), r.status, &prepared);
    for (const RefusedItem& r : *refused_manual) RefuseInStore({prepared.manual_outcomes.at(r.index)}, r.status, &prepared);
    for (const RefusedItem& r : *refused_bulk) RefuseInStore({prepared.bulk_outcomes.at(r.index)}, r.status, &prepared);
    const int64_t apply_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - apply_start).count();
    AddStageTime(&CommandStageTimes::apply_us, MicrosSince(apply_start));
    membership_.Resume();

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

    const uint64_t ticket = commit_queue_.Push(NextOffsets(batch));
    pending_reports_.emplace(ticket, std::move(report));
    Publication& p = publications_.emplace_back();
    p.ticket = ticket;
    p.records = BuildRecords(batch, prepared);
    p.results.assign(p.records.size(), RdKafka::ERR__IN_PROGRESS);
    p.outstanding = p.records.size();
    // Each batch's publication backs off on its own, with its own jitter.
    p.backoff = Backoff(RetryPolicy(), options_.backoff_seed ^ (ticket * 0xd1342543de82ef95ULL));
    for (size_t i = 0; i < p.records.size(); ++i) Produce(p, i);
    producer_->poll(0);
    return true;
  }

  BackoffPolicy RetryPolicy() const {
    return BackoffPolicy{options_.retry_initial_ms, options_.retry_max_ms};
  }

  size_t MaxUnsettled() const {
    return static_cast<size_t>(std::max<int32_t>(1, options_.max_unsettled_batches));
  }

  // Serves delivery reports, retries failed records, and commits the offsets of the settled
  // prefix of batches. Waits until at most `max_unsettled` batches are unsettled. Returns false
  // iff stop was requested first.
  bool SettleAndCommit(StopSignal& stop, size_t max_unsettled) {
    const auto start = SteadyClock::now();
    producer_->poll(0);
    bool ok = true;
    for (;;) {
      for (auto it = publications_.begin(); it != publications_.end();) {
        if (it->outstanding > 0) {
          ++it;
          continue;
        }
        const bool failed = std::any_of(it->results.begin(), it->results.end(),
                                        [](RdKafka::ErrorCode e) { return e != RdKafka::ERR_NO_ERROR; });
        if (failed) {
          if (!Republish(*it, stop)) {
            ok = false;
            break;
          }
          ++it;
          continue;
        }
        commit_queue_.MarkSettled(it->ticket);
        it = publications_.erase(it);
      }
      if (!ok) break;
      CommitSettled();
      if (commit_queue_.size() <= max_unsettled) break;
      if (stop.requested()) {
        ok = false;
        break;
      }
      producer_->poll(100);
    }
    AddStageTime(&CommandStageTimes::publish_us, MicrosSince(start));
    return ok;
  }

  void CommitSettled() {
    CommitQueue::Committable c = commit_queue_.PopCommittable();
    if (c.tickets.empty()) {
      RecordWaitingToCommit();
      return;
    }
    const auto commit_start = SteadyClock::now();
    Commit(c.offsets);
    AddStageTime(&CommandStageTimes::commit_us, MicrosSince(commit_start));
    for (uint64_t ticket : c.tickets) {
      auto node = pending_reports_.extract(ticket);
      if (node.empty()) continue;
      const CommandBatchReport& report = node.mapped();
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
    RecordWaitingToCommit();
  }

  // After a commit round, so that a reader who sees the count knows the round is over.
  void RecordWaitingToCommit() {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.batches_waiting_to_commit = commit_queue_.settled_waiting();
  }

  // Stop: batches not yet settled stay uncommitted; whoever owns their partitions next
  // re-applies them (idempotently) and republishes their records.
  void AbandonUnsettled() {
    if (commit_queue_.empty() && publications_.empty()) return;
    if (!publications_.empty()) {
      spdlog::info(
          "kafka[{}]: stopping with {} batch(es) whose DLQ/results records are not all acknowledged; "
          "they stay uncommitted",
          options_.client_id, commit_queue_.size());
    }
    // Whatever is already settled can still be committed.
    producer_->poll(0);
    for (auto it = publications_.begin(); it != publications_.end();) {
      const bool done = it->outstanding == 0 &&
                        std::all_of(it->results.begin(), it->results.end(),
                                    [](RdKafka::ErrorCode e) { return e == RdKafka::ERR_NO_ERROR; });
      if (!done) {
        ++it;
        continue;
      }
      commit_queue_.MarkSettled(it->ticket);
      it = publications_.erase(it);
    }
    CommitSettled();
    producer_->purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    producer_->flush(1000);
    publications_.clear();
    commit_queue_.Clear();
    pending_reports_.clear();
    RecordWaitingToCommit();
  }

  void AddStageTime(int64_t CommandStageTimes::*field, int64_t us) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.stage_times.*field += us;
  }

  // Logs where the Run thread's time went since the previous call (debug level).
  void LogStageTimes() {
    if (!spdlog::should_log(spdlog::level::debug)) return;
    CommandConsumerStats now;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      now = stats_;
    }
    const CommandStageTimes& a = now.stage_times;
    const CommandStageTimes& b = logged_stats_.stage_times;
    const uint64_t batches = now.batches_total - logged_stats_.batches_total;
    const uint64_t messages = now.messages_total - logged_stats_.messages_total;
    spdlog::debug(
        "kafka[{}]: {} batches, {} messages (mean {:.0f}); ms in gather {} prepare {} apply {} publish {} "
        "commit {}",
        options_.client_id, batches, messages, batches == 0 ? 0.0 : double(messages) / double(batches),
        (a.gather_us - b.gather_us) / 1000, (a.prepare_us - b.prepare_us) / 1000,
        (a.apply_us - b.apply_us) / 1000, (a.publish_us - b.publish_us) / 1000,
        (a.commit_us - b.commit_us) / 1000);
    logged_stats_ = std::move(now);
  }

  // Applies items [first, last) of `items` with `apply` (one store call answering one result per
  // item) and, on success, puts its results at (*results)[first..last).
  template <typename Item, typename Result, typename Apply>
  static Status ApplyCollecting(const std::vector<Item>& items, size_t first, size_t last, const Apply& apply,
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

  // Applies `count` items with `apply_range(first, last)` (one store transaction each), isolating
  // the items the store refuses for good (ApplyIsolatingRefusals); retryable faults are retried
  // (ApplyUntilAnswered). Returns the refused items, or nullopt iff stop was requested first.
  std::optional<std::vector<RefusedItem>> ApplyIsolating(std::string_view what, size_t count,
                                                         const std::function<Status(size_t, size_t)>& apply_range,
                                                         StopSignal& stop, int32_t* attempts) {
    if (count == 0) return std::vector<RefusedItem>();
    BisectionResult r = ApplyIsolatingRefusals(count, [&](size_t first, size_t last) {
      return ApplyUntilAnswered(what, last - first, [&] { return apply_range(first, last); }, stop, attempts);
    });
    if (r.stopped) return std::nullopt;
    for (const RefusedItem& item : r.refused) {
      spdlog::error("kafka[{}]: the store refused one of {} {} for good ({} applies to isolate it): {}; "
                    "rejecting it (store_error) and moving on",
                    options_.client_id, count, what, r.applies, item.status.ToString());
    }
    return std::move(r.refused);
  }

  // Runs `apply` (one store transaction over `count` items) until the store answers for good: Ok,
  // or a permanent error (IsPermanentStoreError: the data is refused). Every other error is
  // retried with a backoff, the group membership kept. nullopt iff stop was requested first.
  std::optional<Status> ApplyUntilAnswered(std::string_view what, size_t count, const std::function<Status()>& apply,
                                           StopSignal& stop, int32_t* attempts) {
    apply_backoff_.Reset();
    for (;;) {
      ++*attempts;
      const Status s = ApplyOnce(apply);
      if (s.ok() || IsPermanentStoreError(s)) return s;
      const int64_t backoff_ms = apply_backoff_.NextDelayMs();
      if (s.retryable()) {
        spdlog::warn("kafka[{}]: applying {} {} failed (attempt {}): {}; retrying in {} ms", options_.client_id,
                     count, what, *attempts, s.ToString(), backoff_ms);
      } else {
        // The database is in the wrong state (not migrated, read-only, ...): not the data's fault,
        // so nothing is refused; retry until an operator fixes it.
        spdlog::error("kafka[{}]: applying {} {} failed (attempt {}): {}; retrying in {} ms", options_.client_id,
                      count, what, *attempts, s.ToString(), backoff_ms);
      }
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.apply_retries_total;
      }
      if (membership_.WaitPaused(stop, backoff_ms) == GroupMembership::WaitResult::kStopped) return std::nullopt;
    }
  }

  // The store reports errors as Status; an exception escaping it is treated the same way.
  static Status ApplyOnce(const std::function<Status()>& apply) {
    try {
      return apply();
    } catch (const std::exception& e) {
      return Status::Retryable(std::string("exception from the job store: ") + e.what());
    }
  }

  std::vector<OutgoingRecord> BuildRecords(const std::vector<MessagePtr>& batch,
                                           const PreparedCommandBatch& prepared) const {
    std::vector<OutgoingRecord> records;
    records.reserve(prepared.rejections.size() + prepared.store_refusals.size() + prepared.outcomes.size());
    for (const std::vector<CommandRejection>* list : {&prepared.rejections, &prepared.store_refusals}) {
      for (const CommandRejection& r : *list) {
        const RdKafka::Message& m = *batch.at(r.index);
        OutgoingRecord rec;
        rec.topic = &config_.dlq_topic;
        rec.is_dlq = true;
        if (m.key_pointer() != nullptr) rec.key.emplace(static_cast<const char*>(m.key_pointer()), m.key_len());
        if (m.payload() != nullptr) rec.value.emplace(static_cast<const char*>(m.payload()), m.len());
        rec.headers = CopyHeaders(m);
        rec.headers.push_back({kErrorHeader, r.status.ToString()});
        rec.headers.push_back({kSourcePartitionHeader, std::to_string(m.partition())});
        rec.headers.push_back({kSourceOffsetHeader, std::to_string(m.offset())});
        records.push_back(std::move(rec));
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

  // Called once every record of `p` has a report and some failed: waits a backoff (keeping the
  // group membership), then produces the failed records again. Returns false iff stop was
  // requested first.
  bool Republish(Publication& p, StopSignal& stop) {
    std::vector<size_t> failed;
    RdKafka::ErrorCode first_err = RdKafka::ERR_NO_ERROR;
    for (size_t i = 0; i < p.records.size(); ++i) {
      const RdKafka::ErrorCode err = p.results[i];
      if (err == RdKafka::ERR_NO_ERROR) continue;
      OutgoingRecord& rec = p.records[i];
      if (first_err == RdKafka::ERR_NO_ERROR) first_err = err;
      if (rec.is_dlq && rec.value.has_value() && !rec.value->empty() &&
          (err == RdKafka::ERR_MSG_SIZE_TOO_LARGE || err == RdKafka::ERR_RECORD_LIST_TOO_LARGE)) {
        // The original value plus belfry's headers no longer fits: keep the record, drop the value.
        rec.headers.push_back({kValueDroppedHeader, std::to_string(rec.value->size()) + " bytes"});
        rec.value = std::string();
      }
      failed.push_back(i);
    }
    ReplaceProducerIfFatal();
    const int64_t backoff_ms = p.backoff.NextDelayMs();
    const auto level = ClassifyDeliveryError(first_err) == SendStatus::kErrorNonRetryable
                           ? spdlog::level::err
                           : spdlog::level::warn;
    spdlog::log(level,
                "kafka[{}]: {} of {} DLQ/results records not delivered (attempt {}, first error: {}); "
                "retrying in {} ms",
                options_.client_id, failed.size(), p.records.size(), p.attempt, RdKafka::err2str(first_err),
                backoff_ms);
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.publish_retries_total;
    }
    if (membership_.WaitPaused(stop, backoff_ms) == GroupMembership::WaitResult::kStopped) return false;
    membership_.Resume();
    ++p.attempt;
    for (size_t i : failed) p.results[i] = RdKafka::ERR__IN_PROGRESS;
    p.outstanding = failed.size();
    for (size_t i : failed) Produce(p, i);
    producer_->poll(0);
    return true;
  }

  // Produces record `index` of `p`. A record the producer refuses outright counts as reported.
  void Produce(Publication& p, size_t index) {
    const OutgoingRecord& rec = p.records[index];
    void* const tag =
        reinterpret_cast<void*>(static_cast<uintptr_t>((uint64_t{TicketTag(p.ticket)} << 32) | index));
    for (;;) {
      std::unique_ptr<RdKafka::Headers> headers;
      if (!rec.headers.empty()) {
        headers.reset(RdKafka::Headers::create());
        for (const Header& h : rec.headers) {
          headers->add(h.key, h.value ? h.value->data() : nullptr, h.value ? h.value->size() : 0);
        }
      }
      const RdKafka::ErrorCode err =
          producer_->produce(*rec.topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                             rec.value ? const_cast<char*>(rec.value->data()) : nullptr,
                             rec.value ? rec.value->size() : 0, rec.key ? rec.key->data() : nullptr,
                             rec.key ? rec.key->size() : 0, /*timestamp=*/0, headers.get(), tag);
      if (err == RdKafka::ERR_NO_ERROR) {
        headers.release();  // owned by librdkafka now
        return;
      }
      if (err == RdKafka::ERR__QUEUE_FULL) {
        producer_->poll(50);
        continue;
      }
      if (p.results[index] == RdKafka::ERR__IN_PROGRESS) {
        p.results[index] = err;
        --p.outstanding;
      }
      return;
    }
  }

  static CommitQueue::Offsets NextOffsets(const std::vector<MessagePtr>& batch) {
    CommitQueue::Offsets next;
    for (const MessagePtr& m : batch) {
      int64_t& n = next[{m->topic_name(), m->partition()}];
      n = std::max(n, m->offset() + 1);
    }
    return next;
  }

  void Commit(const CommitQueue::Offsets& next) {
    TopicPartitionList offsets;
    for (const auto& [tp, offset] : next) {
      // A revoked partition's position is its new owner's business; the batch was applied, so
      // skipping its commit only costs an idempotent replay.
      if (membership_.IsAssigned(tp)) offsets.Add(tp.first, tp.second, offset);
    }
    if (offsets.empty()) return;
    const RdKafka::ErrorCode err = consumer_->commitSync(offsets.get());
    if (err != RdKafka::ERR_NO_ERROR) {
      spdlog::warn("kafka[{}]: committing offsets failed: {} (the batch will be re-applied idempotently)",
                   options_.client_id, RdKafka::err2str(err));
      return;
    }
    for (const RdKafka::TopicPartition* tp : offsets.get()) {
      if (tp->err() != RdKafka::ERR_NO_ERROR) {
        spdlog::warn("kafka[{}]: committing {}[{}]@{} failed: {}", options_.client_id, tp->topic(),
                     tp->partition(), tp->offset(), RdKafka::err2str(tp->err()));
      }
    }
  }

  void MaybeRefreshLag() {
    const auto now = SteadyClock::now();
    if (now - last_lag_refresh_ < std::chrono::milliseconds(options_.lag_refresh_ms)) return;
    last_lag_refresh_ = now;
    LogStageTimes();
    TopicPartitionList parts;
    if (consumer_->assignment(parts.get()) != RdKafka::ERR_NO_ERROR) return;
    int64_t lag = 0;
    bool known = parts.empty();
    if (!parts.empty() && consumer_->position(parts.get()) == RdKafka::ERR_NO_ERROR) {
      for (const RdKafka::TopicPartition* tp : parts.get()) {
        int64_t low = 0;
        int64_t high = 0;
        if (tp->offset() < 0 ||
            consumer_->get_watermark_offsets(tp->topic(), tp->partition(), &low, &high) !=
                RdKafka::ERR_NO_ERROR ||
            high < 0) {
          continue;
        }
        lag += std::max<int64_t>(0, high - tp->offset());
        known = true;
      }
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.consumer_lag = known ? lag : -1;
  }

  const KafkaConfig config_;
  JobStore& store_;
  const CommandRules rules_;
  const CommandConsumerOptions options_;
  // Callbacks outlive the clients (declared first, destroyed last).
  KafkaEventLogger event_logger_;
  KafkaEventLogger producer_logger_;
  GroupMembership membership_;  // the consumer's rebalance_cb
  DeliveryReport delivery_report_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::unique_ptr<RdKafka::Producer> producer_;

  // Run-thread state (the callbacks above run inside consume()/flush() on that thread).
  Backoff apply_backoff_;
  CommitQueue commit_queue_;              // applied batches, in apply order, until committed
  std::deque<Publication> publications_;  // records of unsettled batches, in apply order
  std::map<uint64_t, CommandBatchReport> pending_reports_;  // by ticket, reported once committed
  SteadyClock::time_point last_lag_refresh_{};

  CommandConsumerStats logged_stats_;  // Run thread only: the snapshot LogStageTimes last logged

  mutable std::mutex stats_mu_;
  CommandConsumerStats stats_;  // guarded by stats_mu_
};

StatusOr<std::unique_ptr<CommandConsumer>> CommandConsumer::Create(const KafkaConfig& config, JobStore& store,
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
