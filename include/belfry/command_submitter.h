// CommandSubmitter: how the admin API publishes a command (POST /v1/commands, docs/console.md).
// The Kafka implementation (kafka/kafka_command_submitter.h) publishes it to the commands topic,
// keyed as every producer keys it, and waits for its outcome on the results topic: the command
// then takes the same path as any other (ordering per job, validation, the DLQ, the audit trail).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "belfry/status.h"

namespace belfry {

struct CommandSubmission {
  Status status;            // not Ok: the command was not published (nothing happened)
  int32_t partition = -1;   // where it was published, when it was
  int64_t offset = -1;
  std::optional<std::string> outcome;  // the outcome record's JSON; nullopt: none within the wait
};

// Thread-safe.
class CommandSubmitter {
 public:
  virtual ~CommandSubmitter() = default;
  // Publishes `value` keyed `key` with the header belfry-actor: `actor`, then waits up to `wait`
  // for its outcome.
  virtual CommandSubmission Submit(const std::string& key, const std::string& value, const std::string& actor,
                                   std::chrono::milliseconds wait) = 0;
};

}  // namespace belfry
