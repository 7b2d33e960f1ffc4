// FakeTriggerSink: records every trigger it is given; can be told to fail batches, to hold back
// acknowledgements so that a test sees firings whose triggers are queued but not acked, or to
// deliver at a fixed rate on a FakeClock, like one producer queue in front of a busy broker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "belfry/trigger_sink.h"

namespace belfry {

struct SentTrigger {
  std::string job_id;
  std::string topic;
  std::string key;
  std::string value;  // the encoded JSON value
  int32_t interval_minutes = 0;
  EpochMs scheduled_for_ms = 0;
  EpochMs acked_ms = 0;  // when it was acknowledged (rate mode; else 0)
};

class FakeTriggerSink final : public TriggerSink {
 public:
  std::unique_ptr<TriggerBatch> NewBatch() override;

  // Triggers whose batch has finished (been acknowledged), in order.
  std::vector<SentTrigger> sent() const;
  void Clear();
  // The next n batches fail in Finish() (their triggers are still recorded as "attempted").
  void FailNextBatches(int n);
  // Every trigger of `job_id` fails as a record error with `reason`, resends included. With
  // `spoils_batch`, as a broker refuses a whole record batch, the other triggers to the same
  // topic in the same batch fail with it (they succeed when resent alone).
  // `kind` kBroker: its triggers fail as a broker error instead (a topic without a leader).
  void RefuseJob(const std::string& job_id, const std::string& reason, bool spoils_batch = false,
                 TriggerErrorKind kind = TriggerErrorKind::kRecord);
  // The next trigger of each of `job_ids` (Add or Resend) fails once as a broker error that the
  // batch tracks (listed in Failures()), as a partition without a leader fails only its records;
  // the rest of the batch is acknowledged.
  void FailJobsOnce(const std::vector<std::string>& job_ids);
  // Resend() calls so far.
  int64_t resends() const;
  // While held, no batch is Done() and Finish() blocks; ReleaseAcks() acknowledges them all
  // and runs the NotifyWhenDone callbacks.
  void HoldAcks();
  void ReleaseAcks();
  // Batches created so far.
  int64_t batches_created() const;
  // Finish() calls blocked right now because the acks are held: a firer waiting for its acks.
  int64_t finishes_held() const;
  // Rate mode: triggers are acknowledged one after another, `per_second` of them per second of
  // `clock`, in the order they were added to any batch of this sink (one queue). A batch is
  // Done() once the clock has reached its last trigger's ack; Poll() runs the NotifyWhenDone
  // callbacks of the batches that are done by now. Finish() never waits.
  void SetDeliveryRate(const Clock* clock, int64_t per_second);
  void Poll();

 private:
  friend class FakeTriggerBatch;
  mutable std::mutex mu_;
  std::condition_variable acks_cv_;
  std::vector<SentTrigger> sent_;
  int fail_batches_ = 0;
  std::map<std::string, std::pair<std::string, bool>> refused_jobs_;  // job -> reason, spoils_batch
  std::map<std::string, TriggerErrorKind> refused_kind_;
  std::map<std::string, int> fail_once_;  // job -> triggers still to fail with a broker error
  int64_t resends_ = 0;
  bool hold_ = false;
  int64_t finishes_held_ = 0;
  int64_t next_batch_ = 0;
  std::map<int64_t, std::function<void()>> waiting_;  // batch number -> NotifyWhenDone callback
  const Clock* clock_ = nullptr;                      // rate mode
  int64_t per_second_ = 0;
  int64_t next_ack_us_ = 0;                      // when the queue's last trigger is acknowledged
  std::map<int64_t, int64_t> waiting_until_us_;  // rate mode: batch number -> its last ack
};

}  // namespace belfry
