// PlainProducer: a bare librdkafka producer, so integration tests publish commands exactly as
// a foreign producer service would, without any of belfry's own Kafka code.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace RdKafka {
class Producer;
}

namespace belfry {

class PlainProducer final {
 public:
  explicit PlainProducer(const std::string& brokers);
  ~PlainProducer();
  PlainProducer(const PlainProducer&) = delete;
  PlainProducer& operator=(const PlainProducer&) = delete;

  // Produces and waits for the ack; returns the (partition, offset), or (-1, -1) on failure.
  std::pair<int32_t, int64_t> Send(const std::string& topic, const std::optional<std::string>& key,
                                   const std::optional<std::string>& value,
                                   const std::vector<std::pair<std::string, std::string>>& headers = {});

 private:
  std::unique_ptr<RdKafka::Producer> producer_;
};

}  // namespace belfry
