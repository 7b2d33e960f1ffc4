// TopicTail: reads one or more topics without committing, for `belfry watch`, the tests and the
// load-test verifier. Topics that do not exist yet are picked up once they are created.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/status.h"
#include "belfry/stop_signal.h"

namespace belfry {

// One consumed message. Null keys/values are nullopt; a null header value reads as "".
struct TailRecord {
  std::string topic;
  int32_t partition = -1;
  int64_t offset = -1;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::map<std::string, std::string> headers;  // the last value of each header key
  EpochMs timestamp_ms = 0;
};

struct TopicTailOptions {
  std::string client_id = "belfry-tail";
  // Where a partition with no committed offset starts: its beginning, or its end at the time
  // the partition is assigned.
  bool from_beginning = false;
  // Empty: a unique group, so the tail sees every partition. A shared group id splits the
  // partitions between tails (still never committing).
  std::string group_id;
  // How soon topics created after subscription are noticed.
  int32_t metadata_refresh_ms = 1000;
};

// Not thread-safe.
class TopicTail final {
 public:
  class Impl;
  using Callback = std::function<void(const TailRecord&)>;

  static StatusOr<std::unique_ptr<TopicTail>> Create(const KafkaConfig& config,
                                                     std::vector<std::string> topics,
                                                     TopicTailOptions options = {});
  ~TopicTail();
  TopicTail(const TopicTail&) = delete;
  TopicTail& operator=(const TopicTail&) = delete;

  // Consumes for `duration`, calling `fn` for every message; returns how many there were.
  size_t Poll(std::chrono::milliseconds duration, const Callback& fn);
  // Consumes until `stop` is requested.
  void Run(StopSignal& stop, const Callback& fn);
  // Consumes (calling `fn`) until the group has assigned this tail at least one partition or
  // `timeout` passes; returns whether it has. With from_beginning = false, call this before
  // producing what the tail must see.
  bool WaitForAssignment(std::chrono::milliseconds timeout, const Callback& fn = nullptr);
  size_t assigned_partitions() const;

 private:
  explicit TopicTail(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace belfry
