// TriggerRefusals: where a trigger refused for good (a record error, belfry/trigger_sink.h)
// goes: the trigger dead-letter topic and the job's last delivery error. Implemented by
// KafkaTriggerRefusals (src/app wiring: Kafka DLQ + job store), FakeTriggerRefusals in tests.
// docs/reliability.md, "Undeliverable triggers".
#pragma once

#include "belfry/clock.h"
#include "belfry/status.h"
#include "belfry/trigger_sink.h"

namespace belfry {

class TriggerRefusals {
 public:
  virtual ~TriggerRefusals() = default;
  // Dead-letters `refused` (one (job, slot)) and records it as its job's last delivery error,
  // at `at_ms`. Ok once both are durable; otherwise an error (the shard-minute is then retried
  // and the trigger refused again: at least one dead letter per refused (job, slot); a second
  // one only after a takeover or a retry on another worker, docs/reliability.md). Thread-safe
  // unless the implementation says otherwise.
  virtual Status Record(const TriggerFailure& refused, EpochMs at_ms) = 0;
};

}  // namespace belfry
