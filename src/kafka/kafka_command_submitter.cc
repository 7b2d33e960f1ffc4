#include "kafka/kafka_command_submitter.h"

#include <utility>

namespace belfry {

StatusOr<std::unique_ptr<KafkaCommandSubmitter>> KafkaCommandSubmitter::Create(const KafkaConfig& config) {
  // The reader first: it starts at the end offsets it sees now, before anything is published.
  OutcomeWaiterOptions reader_options;
  reader_options.client_id = "belfry-http-command-outcomes";
  StatusOr<std::unique_ptr<OutcomeWaiter>> reader = OutcomeWaiter::Create(config, reader_options);
  if (!reader.ok()) return reader.status();
  CommandPublisherOptions publisher_options;
  publisher_options.client_id = "belfry-http-commands";
  StatusOr<std::unique_ptr<CommandPublisher>> publisher = CommandPublisher::Create(config, publisher_options);
  if (!publisher.ok()) return publisher.status();
  return std::unique_ptr<KafkaCommandSubmitter>(
      new KafkaCommandSubmitter(std::move(publisher.value()), std::move(reader.value())));
}

KafkaCommandSubmitter::KafkaCommandSubmitter(std::unique_ptr<CommandPublisher> publisher,
                                             std::unique_ptr<OutcomeWaiter> reader)
    : publisher_(std::move(publisher)), reader_(std::move(reader)) {
  thread_ = std::thread([this] {
    while (!stopping_.load()) {
      reader_->Drain(std::chrono::milliseconds(200),
                     [this](std::string_view key, std::string_view value) { mailbox_.Offer(key, value); });
    }
  });
}

KafkaCommandSubmitter::~KafkaCommandSubmitter() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

CommandSubmission KafkaCommandSubmitter::Submit(const std::string& key, const std::string& value,
                                                const std::string& actor, std::chrono::milliseconds wait) {
  CommandSubmission out;
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
