#include "kafka/execution_consumer.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <future>
#include <utility>
#include <vector>

#include "core/backoff.h"
#include "core/batch_bisection.h"
#include "kafka/group_membership.h"
#include "kafka/kafka_client_config.h"
#include "kafka/topic_partition_list.h"

namespace belfry {
namespace {

using MessagePtr = std::unique_ptr<RdKafka::Message>;

class DeliveryCounter final : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& m) override {
    if (m.err() != RdKafka::ERR_NO_ERROR) {
      failed_.fetch_add(1);
      spdlog::warn("kafka[belfry-executions]: DLQ delivery failed: {}", m.errstr());
    }
  }
  int Take() { return failed_.exchange(0); }

 private:
  std::atomic<int> failed_{0};
};

}  // namespace

class ExecutionConsumer::Impl {
 public:
  Impl(const KafkaConfig& config, ExecutionStore& store, ExecutionRules rules,
       ExecutionConsumerOptions options)
      : config_(config),
        store_(store),
        rules_(rules),
        options_(std::move(options)),
        consumer_logger_(options_.client_id),
        producer_logger_(options_.client_id + "-dlq"),
        membership_(options_.client_id),
        retry_backoff_(BackoffPolicy{options_.retry_initial_ms, options_.retry_max_ms},
                       options_.backoff_seed) {}

  ~Impl() {
    Close();
    if (producer_ != nullptr) producer_->flush(5000);
  }

  Status Init() {
    KafkaSettings consumer_settings = {
        {"group.id", config_.executions_group_id},
        {"enable.auto.commit", "false"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "false"},
    };
    if (!options_.group_instance_id.empty()) {
      consumer_settings.emplace_back("group.instance.id", options_.group_instance_id);
    }
    consumer_settings.insert(consumer_settings.end(), ConsumerFetchSettings().begin(),
                             ConsumerFetchSettings().end());
    auto cconf = BuildKafkaConf(config_, options_.client_id, consumer_settings, &consumer_logger_);
    if (!cconf.ok()) return cconf.status();
    std::string errstr;
    if (cconf.value()->set("rebalance_cb", &membership_, errstr) != RdKafka::Conf::CONF_OK) {
      return Status::Invalid("kafka_config", "rebalance_cb: " + errstr);
    }
    consumer_.reset(RdKafka::KafkaConsumer::create(cconf.value().get(), errstr));
    if (consumer_ == nullptr) return Status::Invalid("kafka_config", "creating consumer: " + errstr);
    membership_.Attach(consumer_.get());
    const KafkaSettings producer_settings = {
        {"enable.idempotence", "true"},
        {"acks", "all"},
        {"linger.ms", "5"},
        {"message.timeout.ms", std::to_string(options_.publish_timeout_ms)},
    };
    auto pconf = BuildKafkaConf(config_, options_.client_id + "-dlq", producer_settings, &producer_logger_);
    if (!pconf.ok()) return pconf.status();
    if (pconf.value()->set("dr_cb", &deliveries_, errstr) != RdKafka::Conf::CONF_OK) {
      return Status::Invalid("kafka_config", "dr_cb: " + errstr);
    }
    producer_.reset(RdKafka::Producer::create(pconf.value().get(), errstr));
    if (producer_ == nullptr) return Status::Invalid("kafka_config", "creating producer: " + errstr);
    const RdKafka::ErrorCode err = consumer_->subscribe({config_.executions_topic});
    if (err != RdKafka::ERR_NO_ERROR) {
      return Status::Retryable("subscribing to '" + config_.executions_topic + "': " + RdKafka::err2str(err));
    }
    return Status::Ok();
  }

  ExecutionConsumerStats Stats() const {
    ExecutionConsumerStats stats;
    stats.batches_total = batches_total_.load();
    stats.retries_total = retries_total_.load();
    stats.assignments_total = membership_.assignments_total();
    stats.revocations_total = membership_.revocations_total();
    return stats;
  }

  // Two stages: this thread polls and parses batch n+1 while a second one makes the first attempt
  // to store batch n (and send its rejects to the DLQ). If that attempt fails, this thread
  // retries it, backing off with the partitions paused and consume() still called, so that a
  // long database outage does not get the member evicted from its group. Offsets are committed
  // here, in batch order, only once their batch is stored: a crash re-reads whatever was not
  // durably stored, never skips it.
  void Run(StopSignal& stop) {
    std::future<Status> in_flight;  // the first attempt to store `previous`
    InFlightBatch previous;
    const auto finish_previous = [&]() -> bool {
      if (!in_flight.valid()) return true;
      const Status first = in_flight.get();
      if (!first.ok() && !RetryKeepingMembership(stop, &previous, first)) return false;
      Commit(previous.messages);
      batches_total_.fetch_add(1);
      if (options_.on_batch) options_.on_batch(previous.report);
      previous = InFlightBatch{};
      return true;
    };
    while (!stop.requested()) {
      InFlightBatch next;
      next.messages = Poll(stop);
      if (next.messages.empty()) {
        if (!finish_previous()) return;
        continue;
      }
      Parse(&next);
      if (!finish_previous()) return;
      previous = std::move(next);
      in_flight = std::async(std::launch::async, [this, batch = &previous] { return StoreOnce(batch); });
    }
    finish_previous();
    Close();
  }

  // Leaves the group (a static member too: GroupMembership::Close), so that the
  // partitions move at once. On the Run thread, or in the destructor once Run has returned.
  void Close() { membership_.Close(); }

 private:
  struct InFlightBatch {
    std::vector<MessagePtr> messages;
    ExecutionBatchReport report;
    std::vector<ExecutionReport> valid;
    std::vector<const RdKafka::Message*> valid_messages;  // valid[i] came from valid_messages[i]
    std::vector<std::pair<const RdKafka::Message*, Status>> rejected;
    bool stored = false;  // the valid reports are stored; the DLQ records may still be missing
  };

  void Parse(InFlightBatch* batch) {
    batch->report.size = batch->messages.size();
    batch->valid.reserve(batch->messages.size());
    for (const MessagePtr& m : batch->messages) {
      RawExecution raw;
      if (m->key_pointer() != nullptr)
        raw.key.emplace(static_cast<const char*>(m->key_pointer()), m->key_len());
      if (m->payload() != nullptr) raw.value.emplace(static_cast<const char*>(m->payload()), m->len());
      raw.source = SourcePosition{m->partition(), m->offset(), m->timestamp().timestamp};
      StatusOr<ExecutionReport> r = ParseExecutionReport(raw, rules_);
      if (r.ok()) {
        batch->valid.push_back(std::move(r.value()));
        batch->valid_messages.push_back(m.get());
      } else {
        ++batch->report.rejected_by_reason[r.status().reason()];
        batch->rejected.emplace_back(m.get(), r.status());
      }
    }
    batch->report.stored = batch->valid.size();
  }

  // One attempt: stores the batch (unless an earlier attempt did), then sends its rejects to the
  // DLQ and waits for their acknowledgements. Never throws: it runs on a std::async thread, and an
  // exception escaping through its future would end Run.
  Status StoreOnce(InFlightBatch* batch) {
    try {
      if (!batch->stored) {
        if (Status st = StoreIsolating(batch); !st.ok()) return st;
        batch->stored = true;
      }
      return PublishRejections(batch->rejected);
    } catch (const std::exception& e) {
      return Status::Retryable(std::string("exception while storing execution reports: ") + e.what());
    } catch (...) {
      return Status::Retryable("unknown exception while storing execution reports");
    }
  }

  // Stores the valid reports, isolating those the store refuses for good (a poison report,
  // docs/reliability.md): they join the batch's rejects (store_error, to the DLQ), the rest is
  // stored. Any other error ends the attempt; the whole attempt is retried, and the reports it
  // stored already are deduplicated by the store.
  Status StoreIsolating(InFlightBatch* batch) {
    Status fault;
    ExecutionApplyResult total;
    const BisectionResult r = ApplyIsolatingRefusals(batch->valid.size(), [&](size_t first, size_t last) {
      StatusOr<ExecutionApplyResult> applied =
          first == 0 && last == batch->valid.size()
              ? store_.ApplyReports(batch->valid)
              : store_.ApplyReports(std::vector<ExecutionReport>(
                    batch->valid.begin() + static_cast<ptrdiff_t>(first),
                    batch->valid.begin() + static_cast<ptrdiff_t>(last)));
      if (applied.ok()) {
        total.stored += applied->stored;
        total.retries_scheduled += applied->retries_scheduled;
        total.retries_superseded += applied->retries_superseded;
        total.retries_too_late += applied->retries_too_late;
        return std::optional<Status>(Status::Ok());
      }
      if (IsPermanentStoreError(applied.status())) return std::optional<Status>(applied.status());
      fault = applied.status();
      return std::optional<Status>();  // ends the bisection: retry the whole attempt
    });
    if (r.stopped) return fault;
    for (const RefusedItem& item : r.refused) {
      const Status refused = Status::Invalid("store_error", item.status.message());
      spdlog::error("kafka[{}]: the store refused an execution report for good: {}; sending it to the DLQ",
                    options_.client_id, refused.ToString());
      ++batch->report.rejected_by_reason[refused.reason()];
      batch->rejected.emplace_back(batch->valid_messages[item.index], refused);
    }
    for (auto it = r.refused.rbegin(); it != r.refused.rend(); ++it) {
      batch->valid.erase(batch->valid.begin() + static_cast<ptrdiff_t>(it->index));
      batch->valid_messages.erase(batch->valid_messages.begin() + static_cast<ptrdiff_t>(it->index));
    }
    batch->report.stored = batch->valid.size();
    batch->report.applied = total;
    return Status::Ok();
  }

  // Retries StoreOnce after `failed` until it succeeds, backing off with the group membership kept
  // (GroupMembership::WaitPaused). One attempt must return within max.poll.interval.ms. Returns
  // false iff stop was requested first.
  bool RetryKeepingMembership(StopSignal& stop, InFlightBatch* batch, Status failed) {
    retry_backoff_.Reset();
    while (!failed.ok()) {
      retries_total_.fetch_add(1);
      const int64_t backoff_ms = retry_backoff_.NextDelayMs();
      spdlog::warn("kafka[{}]: {} failed (attempt {}): {}; retrying in {} ms", options_.client_id,
                   batch->stored ? "publishing to the executions DLQ" : "storing execution reports",
                   retry_backoff_.failures(), failed.ToString(), backoff_ms);
      if (membership_.WaitPaused(stop, backoff_ms) == GroupMembership::WaitResult::kStopped) return false;
      failed = StoreOnce(batch);
    }
    membership_.Resume();
    return true;
  }

  // Starts with the messages consumed while backing off (GroupMembership::carryover).
  std::vector<MessagePtr> Poll(StopSignal& stop) {
    std::vector<MessagePtr> batch = membership_.carryover().Take();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.batch_wait_ms);
    int timeout_ms = 200;  // the first message may take a while; the rest gather for batch_wait
    while (!stop.requested() && static_cast<int32_t>(batch.size()) < options_.batch_max) {
      MessagePtr m(consumer_->consume(timeout_ms));
      if (m->err() == RdKafka::ERR_NO_ERROR) {
        batch.push_back(std::move(m));
      } else if (m->err() != RdKafka::ERR__TIMED_OUT && m->err() != RdKafka::ERR__PARTITION_EOF) {
        spdlog::warn("kafka[{}]: consume: {}", options_.client_id, m->errstr());
      }
      if (batch.empty()) return batch;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      timeout_ms = static_cast<int>(left.count());
    }
    return batch;
  }

  Status PublishRejections(const std::vector<std::pair<const RdKafka::Message*, Status>>& rejected) {
    if (rejected.empty()) return Status::Ok();
    deliveries_.Take();
    for (const auto& [m, status] : rejected) {
      RdKafka::Headers* headers = RdKafka::Headers::create();
      if (const RdKafka::Headers* original = const_cast<RdKafka::Message*>(m)->headers();
          original != nullptr) {
        for (const RdKafka::Headers::Header& h : original->get_all())
          headers->add(h.key(), h.value(), h.value_size());
      }
      headers->add("belfry-error", status.reason() + ": " + status.message());
      headers->add("belfry-source-partition", std::to_string(m->partition()));
      headers->add("belfry-source-offset", std::to_string(m->offset()));
      const RdKafka::ErrorCode err = producer_->produce(
          config_.executions_dlq_topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
          const_cast<void*>(m->payload()), m->payload() != nullptr ? m->len() : 0, m->key_pointer(),
          m->key_pointer() != nullptr ? m->key_len() : 0, 0, headers, nullptr);
      if (err != RdKafka::ERR_NO_ERROR) {
        delete headers;  // not taken over on failure
        producer_->flush(options_.publish_timeout_ms);
        return Status::Retryable(std::string("producing to the executions DLQ: ") + RdKafka::err2str(err));
      }
    }
    const RdKafka::ErrorCode flushed = producer_->flush(static_cast<int>(options_.publish_timeout_ms));
    if (flushed != RdKafka::ERR_NO_ERROR) return Status::Retryable("flushing the executions DLQ timed out");
    if (const int failed = deliveries_.Take(); failed > 0) {
      return Status::Retryable(std::to_string(failed) + " DLQ records were not delivered");
    }
    return Status::Ok();
  }

  void Commit(const std::vector<MessagePtr>& batch) {
    std::map<std::pair<std::string, int32_t>, int64_t> next;
    for (const MessagePtr& m : batch) {
      int64_t& n = next[{m->topic_name(), m->partition()}];
      n = std::max(n, m->offset() + 1);
    }
    TopicPartitionList offsets;
    for (const auto& [tp, offset] : next) {
      // A revoked partition's position is its new owner's business; re-reading is idempotent.
      if (membership_.IsAssigned(tp)) offsets.Add(tp.first, tp.second, offset);
    }
    if (offsets.empty()) return;
    const RdKafka::ErrorCode err = consumer_->commitSync(offsets.get());
    if (err != RdKafka::ERR_NO_ERROR) {
      // Stored already; a re-read after a rebalance is an idempotent no-op.
      spdlog::warn("kafka[{}]: committing offsets failed: {}", options_.client_id, RdKafka::err2str(err));
    }
  }

  const KafkaConfig config_;
  ExecutionStore& store_;
  const ExecutionRules rules_;
  const ExecutionConsumerOptions options_;
  KafkaEventLogger consumer_logger_;
  KafkaEventLogger producer_logger_;
  GroupMembership membership_;  // the consumer's rebalance_cb
  DeliveryCounter deliveries_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::unique_ptr<RdKafka::Producer> producer_;
  Backoff retry_backoff_;
  std::atomic<uint64_t> batches_total_{0};
  std::atomic<uint64_t> retries_total_{0};
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
