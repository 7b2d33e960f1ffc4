#include "plain_producer.h"

#include <librdkafka/rdkafkacpp.h>

#include <stdexcept>

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

}  // namespace

PlainProducer::PlainProducer(const std::string& brokers) {
  std::string err;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", brokers, err);
  conf->set("enable.idempotence", "true", err);
  conf->set("message.max.bytes", "2000000", err);
  conf->set("dr_cb", &g_report, err);
  producer_.reset(RdKafka::Producer::create(conf.get(), err));
  if (!producer_) throw std::runtime_error("cannot create producer: " + err);
}

PlainProducer::~PlainProducer() {
  if (producer_) producer_->flush(10000);
}

std::pair<int32_t, int64_t> PlainProducer::Send(const std::string& topic, const std::optional<std::string>& key,
                                                const std::optional<std::string>& value,
                                                const std::vector<std::pair<std::string, std::string>>& headers) {
  std::pair<int32_t, int64_t> result{-1, -1};
  RdKafka::Headers* h = RdKafka::Headers::create();
  for (const auto& [k, v] : headers) h->add(k, v);
  const RdKafka::ErrorCode err = producer_->produce(
      topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
      value ? const_cast<char*>(value->data()) : nullptr, value ? value->size() : 0, key ? key->data() : nullptr,
      key ? key->size() : 0, 0, h, &result);
  if (err != RdKafka::ERR_NO_ERROR) {
    delete h;
    return {-1, -1};
  }
  for (int i = 0; i < 300 && result.first == -1 && result.second == -1; ++i) producer_->poll(100);
  return result;
}

}  // namespace belfry
