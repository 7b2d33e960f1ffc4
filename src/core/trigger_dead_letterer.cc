#include "core/trigger_dead_letterer.h"

#include <memory>
#include <utility>

namespace belfry {

TriggerFailure TriggerDeadLetter(const TriggerFailure& refused, const std::string& dlq_topic) {
  TriggerFailure out = refused;
  out.topic = dlq_topic;
  out.key = refused.job_id;
  out.headers.emplace_back("belfry-error", refused.reason + ": " + refused.error);
  out.headers.emplace_back("belfry-error-reason", refused.reason);
  out.headers.emplace_back("belfry-target-topic", refused.topic);
  return out;
}

Status TriggerDeadLetterer::Record(const TriggerFailure& refused, EpochMs at_ms) {
  const std::string& job = refused.job_id;
  const EpochMs slot = refused.scheduled_for_ms;
  TriggerFailure letter = TriggerDeadLetter(refused, dlq_topic_);
  for (int attempt = 0; !unrecorded_.Contains(job, slot); ++attempt) {
    std::unique_ptr<TriggerBatch> batch = sink_.NewBatch();
    batch->Resend(letter);
    const Status sent = batch->Finish();
    if (sent.ok()) {
      unrecorded_.Add(job, slot);
      break;
    }
    const std::vector<TriggerFailure> failed = batch->Failures();
    if (attempt == 0 && failed.size() == 1 && failed.front().reason == "message_too_large" &&
        !letter.value.empty()) {
      letter.headers.emplace_back("belfry-value-dropped", std::to_string(letter.value.size()) + " bytes");
      letter.value.clear();
      continue;
    }
    return Status::Retryable("trigger DLQ '" + dlq_topic_ + "': " + sent.message());
  }
  if (store_ == nullptr) {
    unrecorded_.Remove(job, slot);
    return Status::Ok();
  }
  DeliveryErrorRecord record;
  record.job_id = refused.job_id;
  record.topic = refused.topic;
  record.slot_ms = refused.scheduled_for_ms;
  record.error = refused.error;
  record.at_ms = at_ms;
  Status written = store_->RecordDeliveryError(record);
  if (written.ok()) unrecorded_.Remove(job, slot);
  return written;
}

}  // namespace belfry
