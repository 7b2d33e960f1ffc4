// TriggerSink: where triggers go. Implemented by KafkaTriggerSink (src/kafka) and by
// FakeTriggerSink (tests/fakes).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "belfry/clock.h"
#include "belfry/status.h"

namespace belfry {

// One trigger to send. Views are valid only during the Add call.
struct TriggerView {
  std::string_view job_id;
  std::string_view topic;
  std::string_view key;  // already defaulted to job_id when the job has none
  std::string_view details_json;
  int32_t interval_minutes = 0;
  EpochMs scheduled_for_ms = 0;
  // 0 for an ordinary trigger; n >= 1 for the n-th retry of a failed execution (then the value
  // carries "attempt" and the message a belfry-attempt header).
  int32_t attempt = 0;
  // Empty for a scheduled trigger; "trigger" or "backfill" for one a command asked for (then the
  // value carries "manual" and the message a belfry-manual header). docs/manual-fires.md.
  std::string_view manual = {};
};

// Why one trigger was not delivered (docs/reliability.md, "Undeliverable triggers").
enum class TriggerErrorKind {
  // The broker refused this record for good: sending it again unchanged cannot succeed (message
  // too large, topic authorization failed, invalid record, policy violation, an unknown topic
  // after the bounded metadata wait when auto-creation is off, an invalid topic name). Only its
  // (job, slot) fails; the sink's other triggers are unaffected.
  kRecord,
  // Everything else (broker down, no leader, a timeout, a purge): the shard-minute is retried.
  kBroker,
};

// One trigger that failed, as the message that was produced: enough to send the same bytes again
// (TriggerBatch::Resend) or to dead-letter it.
struct TriggerFailure {
  TriggerErrorKind kind = TriggerErrorKind::kBroker;
  std::string reason;  // a metric label: "message_too_large", "topic_authorization", ...
  std::string error;   // the broker's or client's text
  std::string job_id;
  std::string topic;
  std::string key;
  std::string value;  // the encoded trigger value
  EpochMs scheduled_for_ms = 0;
  // The message's headers (belfry-job-id, belfry-scheduled-for, and belfry-attempt or
  // belfry-manual when present), in order.
  std::vector<std::pair<std::string, std::string>> headers;
};

// The triggers of one shard-minute (or one catch-up range).
class TriggerBatch {
 public:
  virtual ~TriggerBatch() = default;
  // Queues one trigger. May block briefly for back-pressure. Thread-compatible.
  virtual void Add(const TriggerView& t) = 0;
  // Waits until every added trigger has been acknowledged by the broker. Returns Ok iff all were;
  // otherwise the first error (Retryable for broker faults). Call once.
  virtual Status Finish() = 0;
  // Non-blocking: true once every added trigger has been acknowledged or has failed, so that
  // Finish() returns without waiting. Thread-compatible, like Add.
  virtual bool Done() = 0;
  // Calls `fn` once, when Done() becomes true: at once on the calling thread if it already is,
  // otherwise on the sink's delivery thread. `fn` runs under the batch's lock, so Finish() and
  // the destructor never return while it runs: it must be quick and must not call the batch.
  // Destroying the batch cancels a call that has not happened yet.
  // REQUIRES: called after the last Add, at most once.
  virtual void NotifyWhenDone(std::function<void()> fn) = 0;
  // After Finish(): every trigger of this batch that failed, with its kind. Empty when Finish()
  // returned Ok. When Finish() failed, the list is either complete (every trigger not in it was
  // acknowledged: a retry may re-send just these, core/unacked_triggers.h) or empty (a timeout,
  // a batch the sink could not track): then the caller must treat the whole batch as failed
  // with a broker error. Never a part of the failures.
  virtual std::vector<TriggerFailure> Failures() = 0;
  // Queues again exactly the message that failed as `f` (same key, value and headers).
  // REQUIRES: no Add on this batch; call before Finish().
  virtual void Resend(const TriggerFailure& f) = 0;
};

class TriggerSink {
 public:
  virtual ~TriggerSink() = default;
  // Thread-safe: several workers may hold batches at once.
  virtual std::unique_ptr<TriggerBatch> NewBatch() = 0;
};

}  // namespace belfry
