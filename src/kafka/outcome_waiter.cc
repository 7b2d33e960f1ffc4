#include "kafka/outcome_waiter.h"

#include <librdkafka/rdkafkacpp.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "kafka/kafka_client_config.h"
#include "kafka/topic_partition_list.h"

namespace belfry {

class OutcomeWaiter::Impl {
 public:
  Impl(const KafkaConfig& config, OutcomeWaiterOptions options)
      : config_(config), options_(std::move(options)), event_logger_(options_.client_id) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (consumer_ != nullptr) consumer_->close();
  }

  Status Init() {
    const KafkaSettings settings = {
        {"group.id", "belfry-outcome-waiter-" + UniqueGroupSuffix()},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "false"},
        {"auto.offset.reset", "earliest"},
    };
    StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
        BuildKafkaConf(config_, options_.client_id, settings, &event_logger_);
    if (!conf.ok()) return conf.status();
    std::string errstr;
    consumer_.reset(RdKafka::KafkaConsumer::create(conf.value().get(), errstr));
    if (consumer_ == nullptr) return Status::Invalid("kafka_config", "creating consumer: " + errstr);

    StatusOr<std::vector<int32_t>> partitions =
        ListPartitions(*consumer_, config_.results_topic, static_cast<int>(options_.query_timeout_ms));
    if (!partitions.ok()) return partitions.status();
    TopicPartitionList start;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.query_timeout_ms);
    for (int32_t p : partitions.value()) {
      int64_t low = 0;
      int64_t high = 0;
      RdKafka::ErrorCode err;
      // A topic created moments ago answers "not leader" until its leaders are elected.
      while ((err = consumer_->query_watermark_offsets(config_.results_topic, p, &low, &high,
                                                       static_cast<int>(options_.query_timeout_ms))) !=
                 RdKafka::ERR_NO_ERROR &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (err != RdKafka::ERR_NO_ERROR) {
        return Status::Retryable("end offset of " + config_.results_topic + "[" + std::to_string(p) +
                                 "]: " + RdKafka::err2str(err));
      }
      start.Add(config_.results_topic, p, high);
    }
    if (Status s = Assign(start); !s.ok()) return s;
    for (int32_t p : partitions.value()) known_.insert(p);
    last_refresh_ = std::chrono::steady_clock::now();
    return Status::Ok();
  }

  StatusOr<std::string> Wait(const std::string& id, std::chrono::milliseconds timeout) {
    if (std::optional<std::string> v = TakeBuffered(id)) return *v;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      std::string key;
      std::string value;
      if (!ConsumeOne(std::min<int64_t>(left.count(), 100), &key, &value)) continue;
      if (key == id) return value;
      if (buffered_count_ < options_.max_buffered) {
        buffered_[std::move(key)].push_back(std::move(value));
        ++buffered_count_;
      }
    }
    return Status::Retryable("no outcome for command '" + id + "' on '" + config_.results_topic +
                             "' within " + std::to_string(timeout.count()) + " ms");
  }

  void Drain(std::chrono::milliseconds duration, const OutcomeWaiter::RecordFn& fn) {
    const auto deadline = std::chrono::steady_clock::now() + duration;
    for (auto now = std::chrono::steady_clock::now(); now < deadline; now = std::chrono::steady_clock::now()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      std::string key;
      std::string value;
      if (ConsumeOne(std::min<int64_t>(left.count(), 100), &key, &value)) fn(key, value);
    }
  }

 private:
  // One keyed record with a value within `timeout_ms`, after assigning any partitions created
  // since the last look (every metadata_refresh_ms); false when none came.
  bool ConsumeOne(int64_t timeout_ms, std::string* key, std::string* value) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_refresh_ >= std::chrono::milliseconds(options_.metadata_refresh_ms)) {
      last_refresh_ = now;
      AssignNewPartitions();
    }
    std::unique_ptr<RdKafka::Message> m(consumer_->consume(static_cast<int>(timeout_ms)));
    if (m->err() == RdKafka::ERR__TIMED_OUT) return false;
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      spdlog::debug("kafka[{}]: consume: {}", options_.client_id, m->errstr());
      return false;
    }
    if (m->key_pointer() == nullptr || m->payload() == nullptr) return false;
    key->assign(static_cast<const char*>(m->key_pointer()), m->key_len());
    value->assign(static_cast<const char*>(m->payload()), m->len());
    return true;
  }

  std::optional<std::string> TakeBuffered(const std::string& id) {
    auto it = buffered_.find(id);
    if (it == buffered_.end()) return std::nullopt;
    std::string v = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) buffered_.erase(it);
    --buffered_count_;
    return v;
  }

  Status Assign(const TopicPartitionList& parts) {
    if (parts.empty()) return Status::Ok();
    std::unique_ptr<RdKafka::Error> err(consumer_->incremental_assign(parts.get()));
    if (err != nullptr) return Status::Retryable("assigning " + config_.results_topic + ": " + err->str());
    return Status::Ok();
  }

  // Partitions (or the whole topic) created after construction hold only newer records.
  void AssignNewPartitions() {
    StatusOr<std::vector<int32_t>> partitions = ListPartitions(*consumer_, config_.results_topic, 1000);
    if (!partitions.ok()) return;
    TopicPartitionList fresh;
    for (int32_t p : partitions.value()) {
      if (!known_.contains(p)) fresh.Add(config_.results_topic, p, RdKafka::Topic::OFFSET_BEGINNING);
    }
    if (fresh.empty() || !Assign(fresh).ok()) return;
    for (const RdKafka::TopicPartition* tp : fresh.get()) known_.insert(tp->partition());
  }

  const KafkaConfig config_;
  const OutcomeWaiterOptions options_;
  KafkaEventLogger event_logger_;  // outlives consumer_
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::set<int32_t> known_;
  std::map<std::string, std::deque<std::string>> buffered_;
  size_t buffered_count_ = 0;
  std::chrono::steady_clock::time_point last_refresh_{};
};

StatusOr<std::unique_ptr<OutcomeWaiter>> OutcomeWaiter::Create(const KafkaConfig& config,
                                                               OutcomeWaiterOptions options) {
  auto impl = std::make_unique<Impl>(config, std::move(options));
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<OutcomeWaiter>(new OutcomeWaiter(std::move(impl)));
}

OutcomeWaiter::OutcomeWaiter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OutcomeWaiter::~OutcomeWaiter() = default;

StatusOr<std::string> OutcomeWaiter::Wait(const std::string& id, std::chrono::milliseconds timeout) {
  return impl_->Wait(id, timeout);
}

void OutcomeWaiter::Drain(std::chrono::milliseconds duration, const RecordFn& fn) { impl_->Drain(duration, fn); }

}  // namespace belfry
