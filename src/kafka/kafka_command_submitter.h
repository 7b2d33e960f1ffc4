// KafkaCommandSubmitter: the CommandSubmitter of POST /v1/commands (docs/console.md). Publishes
// each command to the commands topic with the idempotent producer every CLI command uses, and
// reads the results topic from its end on a thread of its own, handing the outcomes of the
// commands it published to their requests through an OutcomeMailbox. Until that reader has read
// the topic's end offsets (Kafka down at start), Submit publishes nothing and is Retryable.
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
  // Invalid for a bad Kafka configuration; never waits for the broker.
  static StatusOr<std::unique_ptr<KafkaCommandSubmitter>> Create(const KafkaConfig& config);
  ~KafkaCommandSubmitter() override;
  KafkaCommandSubmitter(const KafkaCommandSubmitter&) = delete;
  KafkaCommandSubmitter& operator=(const KafkaCommandSubmitter&) = delete;

  // Waits up to `timeout` for the reader to have its start offsets; false when it has not.
  bool WaitReady(std::chrono::milliseconds timeout) const;

  CommandSubmission Submit(const std::string& key, const std::string& value, const std::string& actor,
                           std::chrono::milliseconds wait) override;

 private:
  KafkaCommandSubmitter(const KafkaConfig& config, std::unique_ptr<CommandPublisher> publisher);

  std::unique_ptr<CommandPublisher> publisher_;
  OutcomeMailbox mailbox_;
  std::atomic<bool> ready_{false};  // the reader has its start offsets
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace belfry
