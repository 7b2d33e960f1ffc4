// LoadtestProducer: one librdkafka producer with a dedicated poll thread, configured like
// belfry's trigger sink (idempotent, acks=all, and KafkaTriggerSinkOptions' linger, batch,
// compression, queue and timeout defaults), so that what the harness measures is comparable
// with what belfry does.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace belfry::loadtest {

struct ProducerSettings {
  std::string brokers;
  std::string client_id = "belfry-loadtest";
  // Raw librdkafka properties applied last (e.g. from --kafka-property linger.ms=20).
  std::map<std::string, std::string> overrides;
};

// The librdkafka properties for `settings`: belfry's trigger-sink settings, then the overrides.
std::vector<std::pair<std::string, std::string>> TriggerSinkLikeProperties(const ProducerSettings& settings);

// One delivery report, delivered on the poll thread.
struct Delivery {
  bool ok = false;
  int32_t partition = -1;
  int64_t offset = -1;
  uint64_t opaque = 0;     // what Produce() was given
  std::string_view error;  // when !ok
};

using KafkaHeaders = std::vector<std::pair<std::string_view, std::string_view>>;

class LoadtestProducer final {
 public:
  // Throws std::runtime_error when librdkafka rejects a property or cannot create the client.
  // `on_delivery` (optional) runs on the poll thread for every message: keep it quick.
  LoadtestProducer(const ProducerSettings& settings, std::function<void(const Delivery&)> on_delivery);
  // Flushes for up to 10 s, then stops the poll thread.
  ~LoadtestProducer();
  LoadtestProducer(const LoadtestProducer&) = delete;
  LoadtestProducer& operator=(const LoadtestProducer&) = delete;

  // Queues one message (copying key, value and headers). Blocks while the local queue is full.
  // Throws std::runtime_error on any other produce error.
  void Produce(const std::string& topic, std::string_view key, std::string_view value,
               const KafkaHeaders& headers, uint64_t opaque = 0);

  // Waits until every queued message has its delivery report or `timeout_ms` passes; returns
  // the number still outstanding.
  int Flush(int timeout_ms);

  int64_t delivered() const { return delivered_.load(std::memory_order_relaxed); }
  int64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  // The first delivery error seen, or "".
  std::string first_error() const;
  RdKafka::Producer* handle() { return producer_.get(); }

 private:
  class DeliveryReport final : public RdKafka::DeliveryReportCb {
   public:
    explicit DeliveryReport(LoadtestProducer* owner) : owner_(owner) {}
    void dr_cb(RdKafka::Message& message) override;

   private:
    LoadtestProducer* const owner_;
  };

  DeliveryReport report_{this};
  std::function<void(const Delivery&)> on_delivery_;
  std::unique_ptr<RdKafka::Producer> producer_;
  std::atomic<int64_t> delivered_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<bool> has_error_{false};
  std::string first_error_;  // written once, before has_error_ is set
  std::atomic<bool> stopping_{false};
  std::thread poll_thread_;
};

}  // namespace belfry::loadtest
