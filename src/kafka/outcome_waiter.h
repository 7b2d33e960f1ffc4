// OutcomeWaiter: waits for a command's outcome on the command-results topic. Reads every
// partition from the end offsets it saw when constructed, so it must be constructed before the
// command is published. Never joins a consumer group or commits.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "belfry/config.h"
#include "belfry/status.h"

namespace belfry {

struct OutcomeWaiterOptions {
  std::string client_id = "belfry-outcome-waiter";
  // Timeout for the metadata and watermark queries made at construction.
  int64_t query_timeout_ms = 10000;
  // How often to look for partitions (or the topic) that appeared after construction; those are
  // read from their beginning, since everything in them is newer than the waiter.
  int64_t metadata_refresh_ms = 1000;
  // Outcomes for other ids seen while waiting are kept for a later Wait, up to this many.
  size_t max_buffered = 100000;
};

// Not thread-safe.
class OutcomeWaiter final {
 public:
  class Impl;

  // Retryable if the broker cannot be queried.
  static StatusOr<std::unique_ptr<OutcomeWaiter>> Create(const KafkaConfig& config,
                                                         OutcomeWaiterOptions options = {});
  ~OutcomeWaiter();
  OutcomeWaiter(const OutcomeWaiter&) = delete;
  OutcomeWaiter& operator=(const OutcomeWaiter&) = delete;

  // Returns the value (outcome JSON) of the next not-yet-returned results record keyed `id`
  // that was published after construction; Retryable if none arrives within `timeout`.
  StatusOr<std::string> Wait(const std::string& id, std::chrono::milliseconds timeout);

  // Reads for `duration`, handing every record with a key and a value to `fn` (the admin API's
  // command outcomes, kafka/command_outcome_reader.h). Records that Wait buffered are not handed
  // out; use one or the other.
  using RecordFn = std::function<void(std::string_view key, std::string_view value)>;
  void Drain(std::chrono::milliseconds duration, const RecordFn& fn);

 private:
  explicit OutcomeWaiter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace belfry
