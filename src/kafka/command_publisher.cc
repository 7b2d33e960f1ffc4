#include "kafka/command_publisher.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "kafka/delivery_error.h"
#include "kafka/kafka_client_config.h"
#include "kafka/outcome_waiter.h"

namespace belfry {
namespace {

// One Publish call's delivery report. Shared with the message (through a heap-allocated
// shared_ptr as the opaque), so a report that arrives after Publish gave up is still safe.
struct Delivery {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;                               // guarded by mu
  RdKafka::ErrorCode err = RdKafka::ERR_NO_ERROR;  // guarded by mu
  PublishedAt at;                                  // guarded by mu
};

}  // namespace

class CommandPublisher::Impl {
 public:
  Impl(const KafkaConfig& config, CommandPublisherOptions options)
      : config_(config),
        options_(std::move(options)),
        topic_(options_.topic.empty() ? config_.commands_topic : options_.topic),
        event_logger_(options_.client_id) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (producer_ == nullptr) return;
    producer_->flush(static_cast<int>(options_.delivery_timeout_ms));
    producer_->purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    producer_->flush(1000);  // serves the purged messages' reports, freeing their opaques
  }

  Status Init() {
    if (options_.wait_for_outcomes) {
      StatusOr<std::unique_ptr<OutcomeWaiter>> w = OutcomeWaiter::Create(config_);
      if (!w.ok()) return w.status();
      waiter_ = std::move(w.value());
    }
    const KafkaSettings settings = {
        {"enable.idempotence", "true"},
        {"acks", "all"},
        {"linger.ms", "0"},
        {"message.timeout.ms", std::to_string(options_.delivery_timeout_ms)},
    };
    StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
        BuildKafkaConf(config_, options_.client_id, settings, &event_logger_);
    if (!conf.ok()) return conf.status();
    std::string errstr;
    if (conf.value()->set("dr_cb", &delivery_report_, errstr) != RdKafka::Conf::CONF_OK) {
      return Status::Invalid("kafka_config", "dr_cb: " + errstr);
    }
    producer_.reset(RdKafka::Producer::create(conf.value().get(), errstr));
    if (producer_ == nullptr) return Status::Invalid("kafka_config", "creating producer: " + errstr);
    return Status::Ok();
  }

  Status Publish(const std::string& key, const std::optional<std::string>& value,
                 const KafkaHeaderList& hdrs, PublishedAt* at) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.delivery_timeout_ms);
    auto delivery = std::make_shared<Delivery>();
    if (Status s = Produce(key, value, hdrs, delivery, deadline); !s.ok()) return s;
    Status st = AwaitDeliveries({delivery}, deadline);
    if (st.ok() && at != nullptr) {
      std::lock_guard<std::mutex> lock(delivery->mu);
      *at = delivery->at;
    }
    return st;
  }

  Status PublishAll(const std::vector<std::pair<std::string, std::string>>& records) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.delivery_timeout_ms);
    std::vector<std::shared_ptr<Delivery>> deliveries;
    deliveries.reserve(records.size());
    for (const auto& [key, value] : records) {
      auto delivery = std::make_shared<Delivery>();
      if (Status s = Produce(key, value, {}, delivery, deadline); !s.ok()) return s;
      deliveries.push_back(std::move(delivery));
    }
    return AwaitDeliveries(deliveries, deadline);
  }

  StatusOr<std::string> WaitForOutcome(const std::string& id, int64_t timeout_ms) {
    if (waiter_ == nullptr) {
      return Status::FailedPrecondition("CommandPublisher was created without wait_for_outcomes");
    }
    return waiter_->Wait(id, std::chrono::milliseconds(timeout_ms));
  }

 private:
  using Deadline = std::chrono::steady_clock::time_point;

  // Queues one message whose report goes to `delivery`; waits (serving reports) while the queue
  // is full, up to `deadline`.
  Status Produce(const std::string& key, const std::optional<std::string>& value, const KafkaHeaderList& hdrs,
                 const std::shared_ptr<Delivery>& delivery, Deadline deadline) {
    std::unique_ptr<RdKafka::Headers> headers;
    if (!hdrs.empty()) {
      headers.reset(RdKafka::Headers::create());
      for (const auto& [k, v] : hdrs) headers->add(k, v);
    }
    auto holder = std::make_unique<std::shared_ptr<Delivery>>(delivery);
    for (;;) {
      const RdKafka::ErrorCode err = producer_->produce(topic_, RdKafka::Topic::PARTITION_UA,
                                                        RdKafka::Producer::RK_MSG_COPY,
                                                        value ? const_cast<char*>(value->data()) : nullptr,
                                                        value ? value->size() : 0, key.data(), key.size(),
                                                        /*timestamp=*/0, headers.get(), holder.get());
      if (err == RdKafka::ERR_NO_ERROR) {
        headers.release();  // owned by librdkafka now
        holder.release();   // freed by the delivery report
        return Status::Ok();
      }
      if (err != RdKafka::ERR__QUEUE_FULL || std::chrono::steady_clock::now() >= deadline) {
        return DeliveryStatus(err, topic_);
      }
      producer_->poll(50);
    }
  }

  // Ok iff every delivery was acknowledged; else the first failure, or Retryable at the deadline.
  Status AwaitDeliveries(const std::vector<std::shared_ptr<Delivery>>& deliveries, Deadline deadline) {
    for (const std::shared_ptr<Delivery>& delivery : deliveries) {
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(delivery->mu);
          if (delivery->done) break;
        }
        if (std::chrono::steady_clock::now() >= deadline) break;
        producer_->poll(20);  // serves delivery reports, possibly other callers' too
      }
      // message.timeout.ms equals the deadline, so the report is due any moment; give it a little.
      std::unique_lock<std::mutex> lock(delivery->mu);
      if (!delivery->cv.wait_for(lock, std::chrono::seconds(2), [&] { return delivery->done; })) {
        return Status::Retryable("no delivery report for the message within " +
                                 std::to_string(options_.delivery_timeout_ms) + " ms");
      }
      if (delivery->err != RdKafka::ERR_NO_ERROR) return DeliveryStatus(delivery->err, topic_);
    }
    return Status::Ok();
  }

  class DeliveryReport final : public RdKafka::DeliveryReportCb {
   public:
    void dr_cb(RdKafka::Message& m) override {
      std::unique_ptr<std::shared_ptr<Delivery>> holder(
          static_cast<std::shared_ptr<Delivery>*>(m.msg_opaque()));
      if (holder == nullptr) return;
      Delivery& d = **holder;
      {
        std::lock_guard<std::mutex> lock(d.mu);
        d.done = true;
        d.err = m.err();
        d.at = PublishedAt{m.partition(), m.offset()};
      }
      d.cv.notify_all();
    }
  };

  const KafkaConfig config_;
  const CommandPublisherOptions options_;
  const std::string topic_;
  KafkaEventLogger event_logger_;   // outlives producer_
  DeliveryReport delivery_report_;  // outlives producer_
  std::unique_ptr<OutcomeWaiter> waiter_;
  std::unique_ptr<RdKafka::Producer> producer_;
};

StatusOr<std::unique_ptr<CommandPublisher>> CommandPublisher::Create(const KafkaConfig& config,
                                                                     CommandPublisherOptions options) {
  auto impl = std::make_unique<Impl>(config, std::move(options));
  if (Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<CommandPublisher>(new CommandPublisher(std::move(impl)));
}

CommandPublisher::CommandPublisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CommandPublisher::~CommandPublisher() = default;

Status CommandPublisher::Publish(const std::string& key, const std::optional<std::string>& value,
                                 const KafkaHeaderList& headers, PublishedAt* at) {
  return impl_->Publish(key, value, headers, at);
}

Status CommandPublisher::PublishAll(const std::vector<std::pair<std::string, std::string>>& records) {
  return impl_->PublishAll(records);
}

StatusOr<std::string> CommandPublisher::WaitForOutcome(const std::string& id, int64_t timeout_ms) {
  return impl_->WaitForOutcome(id, timeout_ms);
}

}  // namespace belfry
