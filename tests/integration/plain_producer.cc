#include "plain_producer.h"

#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <stdexcept>

#include "message_dump.h"

namespace belfry {
namespace {

struct Report final : public RdKafka::DeliveryReportCb {
  void dr_cb(RdKafka::Message& m) override {
    auto* out = static_cast<std::pair<int32_t, int64_t>*>(m.msg_opaque());
    if (m.err() == RdKafka::ERR_NO_ERROR) {
      *out = {m.partition(), m.offset()};
    } else {
      *out = {-1, -2};
    }
  }
};

Report g_report;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PlainProducer::PlainProducer(const std::string& brokers) {
  std::string err;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", brokers, err);
  conf->set("enable.idempotence", "true", err);
  conf->set("message.max.bytes", "2000000", err);
  conf->set("linger.ms", "5", err);
  conf->set("dr_cb", &g_report, err);
  producer_.reset(RdKafka::Producer::create(conf.get(), err));
  if (!producer_) throw std::runtime_error("cannot create producer: " + err);
}

PlainProducer::~PlainProducer() {
  if (producer_) producer_->flush(10000);
}

std::pair<int32_t, int64_t> PlainProducer::Send(
    const std::string& topic, const std::optional<std::string>& key, const std::optional<std::string>& value,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  std::pair<int32_t, int64_t> result{-1, -1};
  RdKafka::Headers* h = RdKafka::Headers::create();
  for (const auto& [k, v] : headers) h->add(k, v);
  const RdKafka::ErrorCode err =
      producer_->produce(topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                         value ? const_cast<char*>(value->data()) : nullptr, value ? value->size() : 0,
                         key ? key->data() : nullptr, key ? key->size() : 0, 0, h, &result);
  if (err != RdKafka::ERR_NO_ERROR) {
    delete h;
    return {-1, -1};
  }
  for (int i = 0; i < 300 && result.first == -1 && result.second == -1; ++i) producer_->poll(100);
  if (result.first >= 0 && result.second >= 0) DumpProducedRecord(topic, result.first, result.second, key, value, headers);
  return result;
}

std::vector<std::pair<int32_t, int64_t>> PlainProducer::SendBatch(const std::string& topic,
                                                                  const std::vector<PlainMessage>& messages,
                                                                  int64_t timeout_ms) {
  // (-1, -1) until the delivery report arrives; the report writes (p, o) or (-1, -2).
  std::vector<std::pair<int32_t, int64_t>> results(messages.size(), {-1, -1});
  std::vector<bool> produced(messages.size(), false);
  const int64_t deadline = SteadyMs() + timeout_ms;
  for (size_t i = 0; i < messages.size(); ++i) {
    const PlainMessage& m = messages[i];
    while (true) {
      RdKafka::Headers* h = RdKafka::Headers::create();
      for (const auto& [k, v] : m.headers) h->add(k, v);
      const RdKafka::ErrorCode err = producer_->produce(
          topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
          m.value ? const_cast<char*>(m.value->data()) : nullptr, m.value ? m.value->size() : 0,
          m.key ? m.key->data() : nullptr, m.key ? m.key->size() : 0, 0, h, &results[i]);
      if (err == RdKafka::ERR_NO_ERROR) {
        produced[i] = true;
        break;
      }
      delete h;
      if (err != RdKafka::ERR__QUEUE_FULL || SteadyMs() > deadline) break;
      producer_->poll(10);
    }
    producer_->poll(0);
  }
  while (producer_->outq_len() > 0 && SteadyMs() < deadline) producer_->poll(50);
  if (producer_->outq_len() > 0) {
    // The delivery reports point into `results`: make librdkafka give them all back before it
    // goes out of scope.
    producer_->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
    const int64_t purge_deadline = SteadyMs() + 30'000;
    while (producer_->outq_len() > 0 && SteadyMs() < purge_deadline) producer_->poll(50);
  }
  producer_->poll(0);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!produced[i] || results[i].first < 0) results[i] = {-1, -1};
    if (results[i].first >= 0 && results[i].second >= 0) {
      DumpProducedRecord(topic, results[i].first, results[i].second, messages[i].key, messages[i].value,
                         messages[i].headers);
    }
  }
  return results;
}

size_t CountFailed(const std::vector<std::pair<int32_t, int64_t>>& results) {
  size_t n = 0;
  for (const auto& [p, o] : results) n += (p < 0 || o < 0) ? 1 : 0;
  return n;
}

}  // namespace belfry
