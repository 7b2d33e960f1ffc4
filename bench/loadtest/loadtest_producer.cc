#include "loadtest/loadtest_producer.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

#include "kafka/kafka_trigger_sink.h"

namespace belfry::loadtest {

std::vector<std::pair<std::string, std::string>> TriggerSinkLikeProperties(const ProducerSettings& settings) {
  const KafkaTriggerSinkOptions sink;  // belfry's defaults, so the two never drift apart
  std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", settings.brokers},
      {"client.id", settings.client_id},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", std::to_string(sink.linger_ms)},
      {"batch.size", std::to_string(sink.batch_size_bytes)},
      {"compression.type", sink.compression},
      {"queue.buffering.max.messages", std::to_string(sink.queue_max_messages)},
      {"queue.buffering.max.kbytes", std::to_string(sink.queue_max_kbytes)},
      {"message.timeout.ms", std::to_string(sink.message_timeout_ms)},
  };
  for (const auto& [key, value] : settings.overrides) props.emplace_back(key, value);
  return props;
}

void LoadtestProducer::DeliveryReport::dr_cb(RdKafka::Message& message) {
  Delivery d;
  d.ok = message.err() == RdKafka::ERR_NO_ERROR;
  d.partition = message.partition();
  d.offset = message.offset();
  d.opaque = reinterpret_cast<uintptr_t>(message.msg_opaque());
  std::string error;
  if (d.ok) {
    owner_->delivered_.fetch_add(1, std::memory_order_relaxed);
  } else {
    error = message.errstr();
    d.error = error;
    if (!owner_->has_error_.load()) {
      owner_->first_error_ = error;
      owner_->has_error_.store(true);
    }
    owner_->failed_.fetch_add(1, std::memory_order_relaxed);
  }
  if (owner_->on_delivery_) owner_->on_delivery_(d);
}

LoadtestProducer::LoadtestProducer(const ProducerSettings& settings,
                                   std::function<void(const Delivery&)> on_delivery)
    : on_delivery_(std::move(on_delivery)) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string errstr;
  for (const auto& [key, value] : TriggerSinkLikeProperties(settings)) {
    if (conf->set(key, value, errstr) != RdKafka::Conf::CONF_OK) {
      throw std::runtime_error(fmt::format("librdkafka property {}={}: {}", key, value, errstr));
    }
  }
  if (conf->set("dr_cb", &report_, errstr) != RdKafka::Conf::CONF_OK) throw std::runtime_error(errstr);
  producer_.reset(RdKafka::Producer::create(conf.get(), errstr));
  if (producer_ == nullptr) throw std::runtime_error("creating the Kafka producer: " + errstr);
  poll_thread_ = std::thread([this] {
    while (!stopping_.load(std::memory_order_relaxed)) producer_->poll(50);
  });
}

LoadtestProducer::~LoadtestProducer() {
  Flush(10'000);
  stopping_.store(true);
  poll_thread_.join();
  producer_->poll(0);
}

void LoadtestProducer::Produce(const std::string& topic, std::string_view key, std::string_view value,
                               const KafkaHeaders& headers, uint64_t opaque) {
  while (true) {
    RdKafka::Headers* h = nullptr;
    if (!headers.empty()) {
      h = RdKafka::Headers::create();
      for (const auto& [name, v] : headers) h->add(std::string(name), v.data(), v.size());
    }
    const RdKafka::ErrorCode err = producer_->produce(
        topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(value.data()),
        value.size(), key.data(), key.size(), 0, h, reinterpret_cast<void*>(static_cast<uintptr_t>(opaque)));
    if (err == RdKafka::ERR_NO_ERROR) return;  // librdkafka now owns the headers
    delete h;
    if (err != RdKafka::ERR__QUEUE_FULL) {
      throw std::runtime_error(fmt::format("producing to {}: {}", topic, RdKafka::err2str(err)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the poll thread frees room
  }
}

int LoadtestProducer::Flush(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (producer_->outq_len() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return producer_->outq_len();
}

std::string LoadtestProducer::first_error() const { return has_error_.load() ? first_error_ : std::string(); }

}  // namespace belfry::loadtest
