// PlainProducer: a bare librdkafka producer, so integration tests publish commands exactly as
// a foreign producer service would, without any of belfry's own Kafka code.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace RdKafka {
class Producer;
}

namespace belfry {

// One message for PlainProducer::SendBatch.
struct PlainMessage {
  std::optional<std::string> key;    // nullopt: no key
  std::optional<std::string> value;  // nullopt: a tombstone
  std::vector<std::pair<std::string, std::string>> headers;
};

class PlainProducer final {
 public:
  // message.max.bytes is 2,000,000 (the local broker allows 2 MiB), so 1 MB commands can be sent.
  explicit PlainProducer(const std::string& brokers);
  ~PlainProducer();
  PlainProducer(const PlainProducer&) = delete;
  PlainProducer& operator=(const PlainProducer&) = delete;

  // Produces and waits for the ack; returns the (partition, offset), or (-1, -1) on failure.
  std::pair<int32_t, int64_t> Send(const std::string& topic, const std::optional<std::string>& key,
                                   const std::optional<std::string>& value,
                                   const std::vector<std::pair<std::string, std::string>>& headers = {});

  // Produces every message in order (blocking while the local queue is full), then waits up to
  // `timeout_ms` for all delivery reports. Returns each message's (partition, offset) in input
  // order; a message that failed or was not acknowledged in time has (-1, -1). Per-key order is
  // kept (idempotent producer).
  std::vector<std::pair<int32_t, int64_t>> SendBatch(const std::string& topic,
                                                     const std::vector<PlainMessage>& messages,
                                                     int64_t timeout_ms = 120'000);

 private:
  std::unique_ptr<RdKafka::Producer> producer_;
};

// How many entries of a SendBatch result failed.
size_t CountFailed(const std::vector<std::pair<int32_t, int64_t>>& results);

}  // namespace belfry
