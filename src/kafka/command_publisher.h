// CommandPublisher: publishes job commands to the commands topic and (optionally) waits for
// their outcomes. Used by `belfry jobs put|delete|pause|resume`, the demo and the tests; serve
// publishes bulk outcome records and the audit trail's change events through it too.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "belfry/config.h"
#include "belfry/status.h"

namespace belfry {

using KafkaHeaderList = std::vector<std::pair<std::string, std::string>>;

struct CommandPublisherOptions {
  std::string client_id = "belfry-command-publisher";
  // Publish() waits this long for the broker's acknowledgement (also message.timeout.ms).
  int64_t delivery_timeout_ms = 10000;
  // Construct an OutcomeWaiter up front (before anything is published) so WaitForOutcome works.
  bool wait_for_outcomes = false;
  // Where Publish produces; empty = config.commands_topic. (serve's bulk operations publish their
  // outcome records to config.results_topic through it.)
  std::string topic;
};

// Where the broker stored a published record.
struct PublishedAt {
  int32_t partition = -1;
  int64_t offset = -1;
};

// Thread-safe, except WaitForOutcome (one caller at a time).
class CommandPublisher final {
 public:
  class Impl;

  static StatusOr<std::unique_ptr<CommandPublisher>> Create(const KafkaConfig& config,
                                                            CommandPublisherOptions options = {});
  ~CommandPublisher();
  CommandPublisher(const CommandPublisher&) = delete;
  CommandPublisher& operator=(const CommandPublisher&) = delete;

  // Produces one message to config.commands_topic (value nullopt = tombstone) with an idempotent,
  // acks=all producer, and waits for its delivery report. Ok iff the broker acknowledged it.
  // When Ok and `at` is not null, *at is where the record was stored.
  Status Publish(const std::string& key, const std::optional<std::string>& value,
                 const KafkaHeaderList& headers = {}, PublishedAt* at = nullptr);

  // Produces every (key, value) record, in order, then waits for all their delivery reports
  // (pipelined: one round trip for the lot, not one each). Ok iff the broker acknowledged every
  // one; on failure some may have been delivered (the caller's retry repeats them: at least once).
  // The idempotent producer keeps each partition's records in order.
  Status PublishAll(const std::vector<std::pair<std::string, std::string>>& records);

  // The outcome JSON for command `id` from the results topic, published after this publisher was
  // created. Retryable on timeout; FailedPrecondition unless options.wait_for_outcomes.
  StatusOr<std::string> WaitForOutcome(const std::string& id, int64_t timeout_ms);

 private:
  explicit CommandPublisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace belfry
