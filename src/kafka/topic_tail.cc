#include "kafka/topic_tail.h"

#include <librdkafka/rdkafkacpp.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "kafka/kafka_client_config.h"

namespace belfry {

class TopicTail::Impl {
 public:
  Impl(const KafkaConfig& config, std::vector<std::string> topics, TopicTailOptions options)
      : config_(config),
        topics_(std::move(topics)),
        options_(std::move(options)),
        event_logger_(options_.client_id),
        rebalance_(this) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (consumer_ != nullptr) consumer_->close();
  }

  Status Init() {
    const std::string group =
        options_.group_id.empty() ? "belfry-tail-" + UniqueGroupSuffix() : options_.group_id;
    const KafkaSettings settings = {
        {"group.id", group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "false"},
        {"auto.offset.reset", options_.from_beginning ? "earliest" : "latest"},
        {"topic.metadata.refresh.interval.ms", std::to_string(options_.metadata_refresh_ms)},
    };
    StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
        BuildKafkaConf(config_, options_.client_id, settings, &event_logger_);
    if (!conf.ok()) return conf.status();
    std::string errstr;
    if (conf.value()->set("rebalance_cb", &rebalance_, errstr) != RdKafka::Conf::CONF_OK) {
      return Status::Invalid("kafka_config", "rebalance_cb: " + errstr);
    }
    consumer_.reset(RdKafka::KafkaConsumer::create(conf.value().get(), errstr));
    if (consumer_ == nullptr) return Status::Invalid("kafka_config", "creating consumer: " + errstr);
    const RdKafka::ErrorCode err = consumer_->subscribe(topics_);
    if (err != RdKafka::ERR_NO_ERROR) return Status::Retryable("subscribe: " + RdKafka::err2str(err));
    return Status::Ok();
  }

  // Consumes at most one message within `timeout_ms`; returns whether one was delivered.
  bool ConsumeOne(int timeout_ms, const Callback& fn) {
    std::unique_ptr<RdKafka::Message> m(consumer_->consume(timeout_ms));
    if (m->err() == RdKafka::ERR__TIMED_OUT) return false;
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      // Subscribing to a topic that does not exist yet reports UNKNOWN_TOPIC_OR_PART: expected.
      spdlog::debug("kafka[{}]: consume: {}", options_.client_id, m->errstr());
      return false;
    }
    if (!fn) return true;
    TailRecord r;
    r.topic = m->topic_name();
    r.partition = m->partition();
    r.offset = m->offset();
    if (m->key_pointer() != nullptr) r.key.emplace(static_cast<const char*>(m->key_pointer()), m->key_len());
    if (m->payload() != nullptr) r.value.emplace(static_cast<const char*>(m->payload()), m->len());
    if (const RdKafka::Headers* headers = m->headers(); headers != nullptr) {
      for (const RdKafka::Headers::Header& h : headers->get_all()) {
        r.headers[h.key()] = h.value() != nullptr
                                 ? std::string(static_cast<const char*>(h.value()), h.value_size())
                                 : std::string();
      }
    }
    r.timestamp_ms = m->timestamp().timestamp;
    fn(r);
    return true;
  }

  size_t Poll(std::chrono::milliseconds duration, const Callback& fn) {
    const auto deadline = std::chrono::steady_clock::now() + duration;
    size_t n = 0;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return n;
      if (ConsumeOne(static_cast<int>(std::min<int64_t>(left.count(), 100)), fn)) ++n;
    }
  }

  void Run(StopSignal& stop, const Callback& fn) {
    while (!stop.requested()) ConsumeOne(100, fn);
  }

  bool WaitForAssignment(std::chrono::milliseconds timeout, const Callback& fn) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (assigned_ == 0 && std::chrono::steady_clock::now() < deadline) ConsumeOne(100, fn);
    return assigned_ > 0;
  }

  size_t assigned() const { return assigned_; }

 private:
  class Rebalance final : public RdKafka::RebalanceCb {
   public:
    explicit Rebalance(Impl* impl) : impl_(impl) {}
    void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                      std::vector<RdKafka::TopicPartition*>& partitions) override {
      const bool cooperative = consumer->rebalance_protocol() == "COOPERATIVE";
      if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
        if (cooperative) {
          std::unique_ptr<RdKafka::Error> e(consumer->incremental_assign(partitions));
          impl_->assigned_ += partitions.size();
        } else {
          consumer->assign(partitions);
          impl_->assigned_ = partitions.size();
        }
      } else if (cooperative && err == RdKafka::ERR__REVOKE_PARTITIONS) {
        std::unique_ptr<RdKafka::Error> e(consumer->incremental_unassign(partitions));
        impl_->assigned_ -= std::min(impl_->assigned_, partitions.size());
      } else {
        consumer->unassign();
        impl_->assigned_ = 0;
      }
      spdlog::debug("kafka[{}]: rebalance {}: {} partitions assigned", impl_->options_.client_id,
                    RdKafka::err2str(err), impl_->assigned_);
    }

   private:
    Impl* const impl_;
  };

  const KafkaConfig config_;
  const std::vector<std::string> topics_;
  const TopicTailOptions options_;
  KafkaEventLogger event_logger_;  // outlives consumer_
  Rebalance rebalance_;            // outlives consumer_
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  size_t assigned_ = 0;
};

StatusOr<std::unique_ptr<TopicTail>> TopicTail::Create(const KafkaConfig& config,
                                                       std::vector<std::string> topics,
                                                       TopicTailOptions options) {
  auto impl = std::make_unique<Impl>(config, std::move(topics), std::move(options));
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<TopicTail>(new TopicTail(std::move(impl)));
}

TopicTail::TopicTail(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TopicTail::~TopicTail() = default;

size_t TopicTail::Poll(std::chrono::milliseconds duration, const Callback& fn) {
  return impl_->Poll(duration, fn);
}
void TopicTail::Run(StopSignal& stop, const Callback& fn) { impl_->Run(stop, fn); }
bool TopicTail::WaitForAssignment(std::chrono::milliseconds timeout, const Callback& fn) {
  return impl_->WaitForAssignment(timeout, fn);
}
size_t TopicTail::assigned_partitions() const { return impl_->assigned(); }

}  // namespace belfry
