// TopicPartitionList: owns the RdKafka::TopicPartition objects that librdkafka's C++ API passes
// around as raw pointers in a std::vector. Private to src/kafka.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "belfry/status.h"

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

// The partition ids of `topic`, from a metadata request on `handle`. Empty if the topic does
// not exist (yet); Retryable if the request fails.
inline StatusOr<std::vector<int32_t>> ListPartitions(RdKafka::Handle& handle, const std::string& topic,
                                                     int timeout_ms) {
  std::string errstr;
  std::unique_ptr<RdKafka::Topic> rkt(RdKafka::Topic::create(&handle, topic, nullptr, errstr));
  if (rkt == nullptr) return Status::Invalid("invalid_topic", "topic '" + topic + "': " + errstr);
  RdKafka::Metadata* raw = nullptr;
  const RdKafka::ErrorCode err = handle.metadata(false, rkt.get(), &raw, timeout_ms);
  std::unique_ptr<RdKafka::Metadata> md(raw);
  if (err != RdKafka::ERR_NO_ERROR) {
    return Status::Retryable("metadata for topic '" + topic + "': " + RdKafka::err2str(err));
  }
  std::vector<int32_t> partitions;
  for (const RdKafka::TopicMetadata* t : *md->topics()) {
    if (t->topic() != topic || t->err() == RdKafka::ERR_UNKNOWN_TOPIC_OR_PART) continue;
    for (const RdKafka::PartitionMetadata* p : *t->partitions()) partitions.push_back(p->id());
  }
  return partitions;
}

}  // namespace belfry
