// KafkaCommandSubmitter: the CommandSubmitter of POST /v1/commands (docs/console.md). Publishes
// each command to the commands topic with the idempotent producer every CLI command uses, and
// reads the results topic from its end (as it stood at Create) on a thread of its own, handing
// the outcomes of the commands it published to their requests through an OutcomeMailbox.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "belfry/command_submitter.h"
#include "belfry/config.h"
#include "core/outcome_mailbox.h"
#include "kafka/command_publisher.h"
#include "kafka/outcome_waiter.h"

namespace belfry {

class KafkaCommandSubmitter final : public CommandSubmitter {
 public:
  // Retryable when the broker cannot be reached (the results topic's end offsets are read here).
  static StatusOr<std::unique_ptr<KafkaCommandSubmitter>> Create(const KafkaConfig& config);
  ~KafkaCommandSubmitter() override;
  KafkaCommandSubmitter(const KafkaCommandSubmitter&) = delete;
  KafkaCommandSubmitter& operator=(const KafkaCommandSubmitter&) = delete;

  CommandSubmission Submit(const std::string& key, const std::string& value, const std::string& actor,
                           std::chrono::milliseconds wait) override;

 private:
  KafkaCommandSubmitter(std::unique_ptr<CommandPublisher> publisher, std::unique_ptr<OutcomeWaiter> reader);

  std::unique_ptr<CommandPublisher> publisher_;
  std::unique_ptr<OutcomeWaiter> reader_;  // used by thread_ only
  OutcomeMailbox mailbox_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace belfry
