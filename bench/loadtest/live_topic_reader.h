// LiveTopicReader: reads every partition of the topics whose names match a regex, from the
// moment it is constructed. It assigns partitions itself (no consumer group, no commits): the
// partitions that exist at construction start at the end offsets queried then, and partitions
// of topics created later (found by a metadata refresh every second) start at their beginning,
// since everything in them is newer than the reader. Hence: every message produced after the
// constructor returns is read, and none produced before it (except to topics that did not exist
// yet). Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "belfry/clock.h"

namespace RdKafka {
class KafkaConsumer;
}  // namespace RdKafka

namespace belfry::loadtest {

inline constexpr size_t kMaxReaderHeaders = 4;

// One consumed message. Views are valid only during the callback.
struct LiveRecord {
  std::string_view topic;
  int32_t partition = -1;
  int64_t offset = -1;
  std::string_view key;
  std::string_view value;
  bool null_value = false;
  // The last value of each of LiveTopicReaderOptions::header_names, in that order.
  std::array<std::string_view, kMaxReaderHeaders> headers;
  std::array<bool, kMaxReaderHeaders> has_header{};
  EpochMs received_ms = 0;  // wall clock when the reader returned it
  EpochMs timestamp_ms = 0;  // the record's Kafka timestamp (the producer's CreateTime), or 0
};

struct LiveTopicReaderOptions {
  std::string brokers;
  std::string topic_regex;                // ECMAScript, matched against the whole topic name
  std::vector<std::string> header_names;  // at most kMaxReaderHeaders
  std::string client_id = "belfry-loadtest-reader";
  int32_t metadata_refresh_ms = 1000;
};

class LiveTopicReader final {
 public:
  // Throws std::runtime_error when the broker cannot be reached.
  explicit LiveTopicReader(LiveTopicReaderOptions options);
  ~LiveTopicReader();
  LiveTopicReader(const LiveTopicReader&) = delete;
  LiveTopicReader& operator=(const LiveTopicReader&) = delete;

  // Reads for up to `max_ms`, calling `fn` for every message; returns how many there were.
  size_t Poll(int64_t max_ms, const std::function<void(const LiveRecord&)>& fn);

  // Wall-clock time at which the starting offsets were fixed: everything produced at or after
  // it is read.
  EpochMs started_at_ms() const { return started_at_ms_; }
  size_t assigned_partitions() const { return assigned_.size(); }
  int64_t consume_errors() const { return consume_errors_; }

 private:
  // Assigns partitions of matching topics not assigned yet, at `initial` offsets (true: the end
  // offsets now) or from their beginning.
  void AssignNewPartitions(bool initial);

  const LiveTopicReaderOptions options_;
  const std::regex topic_regex_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::set<std::pair<std::string, int32_t>> assigned_;
  EpochMs started_at_ms_ = 0;
  int64_t next_refresh_ns_ = 0;
  int64_t consume_errors_ = 0;
};

EpochMs WallClockMs();

// `text` with every regex metacharacter escaped, for building a topic_regex.
std::string RegexEscape(std::string_view text);

}  // namespace belfry::loadtest
