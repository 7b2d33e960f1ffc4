#include "kafka/kafka_command_submitter.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace belfry {

StatusOr<std::unique_ptr<KafkaCommandSubmitter>> KafkaCommandSubmitter::Create(const KafkaConfig& config) {
  CommandPublisherOptions publisher_options;
  publisher_options.client_id = "belfry-http-commands";
  StatusOr<std::unique_ptr<CommandPublisher>> publisher = CommandPublisher::Create(config, publisher_options);
  if (!publisher.ok()) return publisher.status();
  return std::unique_ptr<KafkaCommandSubmitter>(new KafkaCommandSubmitter(config, std::move(publisher.value())));
}

KafkaCommandSubmitter::KafkaCommandSubmitter(const KafkaConfig& config, std::unique_ptr<CommandPublisher> publisher)
    : publisher_(std::move(publisher)) {
  thread_ = std::thread([this, config] {
    // The reader starts at the end offsets it sees when created: until then no command is
    // published (Submit answers Retryable), so that no outcome can be missed.
    std::unique_ptr<OutcomeWaiter> reader;
    OutcomeWaiterOptions reader_options;
    reader_options.client_id = "belfry-http-command-outcomes";
    bool warned = false;
    while (!stopping_.load() && reader == nullptr) {
      StatusOr<std::unique_ptr<OutcomeWaiter>> made = OutcomeWaiter::Create(config, reader_options);
      if (made.ok()) {
        reader = std::move(made.value());
        break;
      }
      if (!warned) {
        spdlog::warn("POST /v1/commands answers 503 until the results topic can be read: {}",
                     made.status().ToString());
        warned = true;
      }
      for (int i = 0; i < 10 && !stopping_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (reader == nullptr) return;
    if (warned) spdlog::info("POST /v1/commands: the results topic is read again");
    ready_.store(true);
    while (!stopping_.load()) {
      reader->Drain(std::chrono::milliseconds(200),
                    [this](std::string_view key, std::string_view value) { mailbox_.Offer(key, value); });
    }
  });
}

KafkaCommandSubmitter::~KafkaCommandSubmitter() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

bool KafkaCommandSubmitter::WaitReady(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready_.load()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

CommandSubmission KafkaCommandSubmitter::Submit(const std::string& key, const std::string& value,
                                                const std::string& actor, std::chrono::milliseconds wait) {
  CommandSubmission out;
  if (!ready_.load()) {
    out.status = Status::Retryable("the node cannot read the command results topic yet (is Kafka reachable?)");
    return out;
  }
  mailbox_.Expect(key);  // before publishing: its outcome may come back before Await
  PublishedAt at;
  out.status = publisher_->Publish(key, value, {{"belfry-actor", actor}}, &at);
  if (out.status.ok()) {
    out.partition = at.partition;
    out.offset = at.offset;
    out.outcome = mailbox_.Await(key, at.partition, at.offset, std::chrono::steady_clock::now() + wait);
  }
  mailbox_.Forget(key);
  return out;
}

}  // namespace belfry
