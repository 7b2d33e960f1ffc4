// ShardFirer: fires one shard up to a minute: claim, plan (misfire policy), stream the due jobs
// into the trigger sink, wait for every ack, then record the shard-minute as fired.
//
// A firing has two halves, so a caller can overlap the acks of one firing with the query of the
// next: Begin() claims, plans and queues every due trigger of the plan without waiting for acks;
// Complete() waits for the acks and only then moves the watermark. FireUpTo() does both.
//
// Thread-compatible: one ShardFirer per worker thread, each with its own JobStore and
// ShardLedger (database connections); the TriggerSink may be shared.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/job_store.h"
#include "belfry/scheduler_observer.h"
#include "belfry/shard_ledger.h"
#include "belfry/trigger_sink.h"
#include "core/catchup_planner.h"
#include "core/topic_policy.h"

namespace belfry {

class ShardFirer final {
 public:
  enum class Outcome { kFired, kNotClaimed, kNothingToDo, kFailed };

  // A firing whose triggers are queued in the sink and whose claim is held, but whose
  // watermark is not recorded yet. Movable; pass it to Complete() on the same firer.
  class Pending final {
   public:
    Pending() = default;
    Pending(Pending&&) = default;
    Pending& operator=(Pending&&) = default;

    int32_t shard() const { return shard_; }
    int64_t triggers() const;  // queued so far
    // Non-blocking: true once every queued trigger is acknowledged or has failed, so that
    // Complete() will not wait.
    bool Done() const;
    // Calls `fn` when a query's triggers are all acknowledged or failed (at once for those
    // that already are): up to once per query, so use it as a wake-up and test Done(). `fn`
    // runs on the sink's delivery thread and must be quick; it must not touch the firing.
    void NotifyWhenDone(const std::function<void()>& fn);

   private:
    friend class ShardFirer;
    struct Query {
      std::unique_ptr<TriggerBatch> batch;
      ShardMinuteReport report;
      EpochMs started = 0;
      bool query_ok = false;
    };
    int32_t shard_ = 0;
    int64_t hold_minute_ = 0;  // the watermark the claim is renewed at while acks arrive
    EpochMs renewed_at_ = 0;   // when the lease was last renewed
    int64_t advance_to_ = 0;
    int64_t caught_up_ = 0;
    int64_t skipped_ = 0;
    int64_t too_old_ = 0;
    std::vector<Query> queries_;
    Status error_;                  // first failure while queuing; Complete() reports it
    bool release_on_error_ = true;  // false once the claim is known to be lost
  };

  // All references must outlive the firer. `policy` is re-checked for every trigger (cached per
  // topic), so a config change also stops jobs stored before it.
  ShardFirer(const SchedulerConfig& cfg, std::string node_id, JobStore& store, ShardLedger& ledger,
             TriggerSink& sink, const TopicPolicy& policy, Clock& clock, SchedulerObserver& observer);
  ShardFirer(const ShardFirer&) = delete;
  ShardFirer& operator=(const ShardFirer&) = delete;

  // Fires `shard` through `target_minute` if this node can claim it. On failure the claim is
  // released and nothing is recorded, so the shard-minutes are fired again later (at-least-once).
  Outcome FireUpTo(int32_t shard, int64_t target_minute, Status* error = nullptr);

  // The first half of FireUpTo: claims the shard and queues every trigger of the plan (on-time
  // minutes first, then the missed ones) without waiting for acks; the lease is renewed after
  // each query. Returns kFired iff `*pending` now holds a firing that the caller must pass to
  // Complete() (even if queuing failed part-way: Complete() then waits for what was queued,
  // releases the claim and reports the failure). Any other outcome is final.
  Outcome Begin(int32_t shard, int64_t target_minute, Pending* pending, Status* error = nullptr);

  // The second half: waits until every trigger of `pending` is acknowledged, then records the
  // watermark and releases the claim. If anything failed, records nothing and releases the
  // claim (when it still holds it). Returns kFired or kFailed.
  Outcome Complete(Pending& pending, Status* error = nullptr);

  // Renews the claim of a pending firing whose acks are still arriving, once a third of the
  // lease has passed since the last renewal, so that a slow broker does not let the claim lapse
  // (another node would then fire the same shard-minutes again). Never moves the watermark.
  // If the claim turns out to be lost, Complete() will report the failure.
  void RenewIfDue(Pending& pending);

  // Records `minute` as the watermark of a shard that never fired, without firing anything, so
  // that its schedule starts now (see WatermarkStarts). Returns kFired if it did; kNothingToDo
  // if the shard has a watermark by now (whoever set it owns what follows); kNotClaimed if
  // another node holds its claim or it is fired through `minute` already.
  Outcome StartWatermark(int32_t shard, int64_t minute, Status* error = nullptr);

 private:
  // Streams one query's due jobs into a new batch of `pending`, without waiting for acks.
  Status QueueQuery(const DueQuery& q, bool on_time, Pending* pending);
  bool TopicAllowed(std::string_view topic);
  // Releases this node's claim of `shard`, reporting a failure to the observer (the lease then
  // expires by itself).
  void ReleaseClaim(int32_t shard);

  const SchedulerConfig& cfg_;
  const std::string node_id_;
  JobStore& store_;
  ShardLedger& ledger_;
  TriggerSink& sink_;
  const TopicPolicy& policy_;
  Clock& clock_;
  SchedulerObserver& observer_;
  struct TopicHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Policy cache, looked up by string_view without building a string per trigger.
  std::unordered_map<std::string, bool, TopicHash, std::equal_to<>> topic_allowed_;
};

}  // namespace belfry
