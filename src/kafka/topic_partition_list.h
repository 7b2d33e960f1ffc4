// TopicPartitionList: owns the RdKafka::TopicPartition objects that librdkafka's C++ API passes
// around as raw pointers in a std::vector. Private to src/kafka.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <cstdint>
#include <string>
#include <vector>

namespace belfry {

class TopicPartitionList final {
 public:
  TopicPartitionList() = default;
  TopicPartitionList(const TopicPartitionList&) = delete;
  TopicPartitionList& operator=(const TopicPartitionList&) = delete;
  ~TopicPartitionList() { RdKafka::TopicPartition::destroy(parts_); }

  void Add(const std::string& topic, int32_t partition, int64_t offset) {
    parts_.push_back(RdKafka::TopicPartition::create(topic, partition, offset));
  }
  // For APIs that fill the vector (assignment(), position(), ...). The list owns what they add.
  std::vector<RdKafka::TopicPartition*>& get() { return parts_; }
  const std::vector<RdKafka::TopicPartition*>& get() const { return parts_; }
  bool empty() const { return parts_.empty(); }
  size_t size() const { return parts_.size(); }

 private:
  std::vector<RdKafka::TopicPartition*> parts_;
};

}  // namespace belfry
