// TriggerDeadLetterer: the TriggerRefusals of a node. A refused trigger goes to the trigger
// dead-letter topic (kafka.triggers_dlq_topic) through a TriggerSink, and becomes its job's last
// delivery error in the job store. docs/reliability.md, "Undeliverable triggers".
#pragma once

#include <string>

#include "belfry/trigger_path_store.h"
#include "belfry/trigger_refusals.h"
#include "belfry/trigger_sink.h"
#include "core/unrecorded_dead_letters.h"

namespace belfry {

// The dead letter of `refused`: the same key (the job's), value and headers, to `dlq_topic`, plus
// belfry-error ("<reason>: <the broker's text>", as the command DLQ's), belfry-error-reason (the
// metric label) and
// belfry-target-topic (the job's topic). The slot is the original belfry-scheduled-for header.
// Pure.
TriggerFailure TriggerDeadLetter(const TriggerFailure& refused, const std::string& dlq_topic);

// Thread-compatible: one per firing worker, with that worker's TriggerPathStore.
class TriggerDeadLetterer final : public TriggerRefusals {
 public:
  // `store` may be null (no last-delivery-error record). `unrecorded` (may be null: this
  // letterer's own) is shared by a node's letterers. All references outlive this.
  TriggerDeadLetterer(TriggerSink& sink, std::string dlq_topic, TriggerPathStore* store,
                      UnrecordedDeadLetters* unrecorded = nullptr)
      : sink_(sink),
        dlq_topic_(std::move(dlq_topic)),
        store_(store),
        unrecorded_(unrecorded != nullptr ? *unrecorded : own_) {}

  // Waits for the dead letter's acknowledgement. A dead letter the DLQ refuses as too large is
  // sent again without its value (header belfry-value-dropped), as the command DLQ does. When
  // the dead letter was acknowledged but the job's last error could not be written, a retry of
  // the same (job, slot) through a letterer sharing `unrecorded` only writes: the letter is not
  // sent twice.
  Status Record(const TriggerFailure& refused, EpochMs at_ms) override;

 private:
  TriggerSink& sink_;
  const std::string dlq_topic_;
  TriggerPathStore* const store_;
  UnrecordedDeadLetters own_;
  UnrecordedDeadLetters& unrecorded_;
};

}  // namespace belfry
