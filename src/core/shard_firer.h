// ShardFirer: fires one shard up to a minute: claim, plan (misfire policy), stream the due jobs
// into the trigger sink, wait for every ack, then record the shard-minute as fired. Missed
// minutes are not fired by that firing: they are recorded as the shard's catch-up debt, in the
// same statement that moves the watermark, and fired later by debt firings (BeginDebt) through
// the catch-up sink, paced by the catch-up rate limiter (docs/catch-up.md).
//
// A firing has two halves, so a caller can overlap the acks of one firing with the query of the
// next: Begin() (or BeginDebt()) claims, plans and queues every due trigger without waiting for
// acks; Complete() waits for the acks and only then records. FireUpTo() does both.
//
// Thread-compatible: one ShardFirer per worker thread, each with its own TriggerPathStore and
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
#include "belfry/scheduler_observer.h"
#include "belfry/shard_ledger.h"
#include "belfry/trigger_path_store.h"
#include "belfry/trigger_refusals.h"
#include "belfry/trigger_sink.h"
#include "core/broker_error_streaks.h"
#include "core/catchup_planner.h"
#include "core/layout_cell.h"
#include "core/rate_limiter.h"
#include "core/topic_policy.h"
#include "core/unacked_triggers.h"

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
    bool debt() const { return debt_; }  // a debt firing (BeginDebt)
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
    bool debt_ = false;
    int64_t read_fence_ = 0;   // the claim's (ShardClaim::read_fence), for every query
    ShardLayout layout_;       // the claim's (ShardClaim::layout): each minute's shards and tick
    int64_t hold_minute_ = 0;  // the watermark the claim is renewed at while acks arrive
    EpochMs renewed_at_ = 0;   // when the lease (claim or debt lease) was last renewed
    int64_t advance_to_ = 0;
    MinuteRange add_debt_;  // on-time firing: the missed minutes it leaves owed
    MinuteRange settle_;    // debt firing: the minutes it pays off
    int64_t caught_up_ = 0;
    int64_t skipped_ = 0;
    int64_t too_old_ = 0;
    std::vector<Query> queries_;
    Status error_;                  // first failure while queuing; Complete() reports it
    bool release_on_error_ = true;  // false once the claim is known to be lost
  };

  // All references must outlive the firer. `policy` is re-checked for every trigger (cached per
  // topic), so a config change also stops jobs stored before it. Debt firings queue to
  // `catch_up_sink` (its own producer, so on-time triggers never queue behind catch-up ones),
  // taking a token from `catch_up_limiter` (may be null: unpaced) per trigger.
  // `layout` (may be null) is offered every layout a claim brings, so the node's ticker learns
  // of a reshard's cut-over (docs/resharding.md). `unacked` (may be null: every retry
  // re-queries) keeps, after a failed firing, what each of its queries left unacknowledged, so
  // that this node's retry of the same range re-sends only that (docs/reliability.md).
  ShardFirer(const SchedulerConfig& cfg, std::string node_id, TriggerPathStore& store, ShardLedger& ledger,
             TriggerSink& sink, TriggerSink& catch_up_sink, RateLimiter* catch_up_limiter,
             const TopicPolicy& policy, Clock& clock, SchedulerObserver& observer, LayoutCell* layout = nullptr,
             TriggerRefusals* refusals = nullptr, BrokerErrorStreaks* streaks = nullptr,
             UnackedTriggers* unacked = nullptr);
  // One sink for both, unpaced.
  ShardFirer(const SchedulerConfig& cfg, std::string node_id, TriggerPathStore& store, ShardLedger& ledger,
             TriggerSink& sink, const TopicPolicy& policy, Clock& clock, SchedulerObserver& observer);
  ShardFirer(const ShardFirer&) = delete;
  ShardFirer& operator=(const ShardFirer&) = delete;

  // Fires `shard` through `target_minute` if this node can claim it. On failure the claim is
  // released and nothing is recorded, so the shard-minutes are fired again later (at-least-once).
  Outcome FireUpTo(int32_t shard, int64_t target_minute, Status* error = nullptr);

  // The first half of FireUpTo: claims the shard and queues every trigger of the plan's on-time
  // minutes without waiting for acks; the lease is renewed after each query. The plan's missed
  // minutes are not queued: Complete() records them as debt. Returns kFired iff `*pending` now
  // holds a firing that the caller must pass to Complete() (even if queuing failed part-way:
  // Complete() then waits for what was queued, releases the claim and reports the failure). Any
  // other outcome is final.
  Outcome Begin(int32_t shard, int64_t target_minute, Pending* pending, Status* error = nullptr);

  // BeginDebt, then Complete.
  Outcome FireDebt(int32_t shard, Status* error = nullptr);

  // A debt firing: takes the shard's debt lease, plans the lowest chunk of its debt
  // (PlanDebtChunk) and queues its triggers, with their original slots, to the catch-up sink,
  // paced by the catch-up limiter; the debt lease is renewed while it waits and after each
  // query. kNotClaimed when the shard owes nothing or another node holds its debt lease. As for
  // Begin, kFired means `*pending` must go to Complete().
  Outcome BeginDebt(int32_t shard, Pending* pending, Status* error = nullptr);

  // The second half: waits until every trigger of `pending` is acknowledged or refused for good
  // (a record error: SettleRecordErrors), then records it
  // and releases the lease: an on-time firing moves the watermark and adds its missed minutes
  // to the debt (ShardLedger::Advance); a debt firing removes its chunk from the debt
  // (ShardLedger::SettleDebt). If anything failed, records nothing and releases the lease (when
  // it still holds it). Returns kFired or kFailed.
  Outcome Complete(Pending& pending, Status* error = nullptr);

  // Renews the lease (claim or debt lease) of a pending firing whose acks are still arriving,
  // once a third of the lease has passed since the last renewal, so that a slow broker does not
  // let it lapse (another node would then fire the same shard-minutes again). Never moves the
  // watermark. If the lease turns out to be lost, Complete() will report the failure.
  void RenewIfDue(Pending& pending);

  // Records `minute` as the watermark of a shard that never fired, without firing anything, so
  // that its schedule starts now (see WatermarkStarts). Returns kFired if it did; kNothingToDo
  // if the shard has a watermark by now (whoever set it owns what follows); kNotClaimed if
  // another node holds its claim or it is fired through `minute` already.
  Outcome StartWatermark(int32_t shard, int64_t minute, Status* error = nullptr);

 private:
  // The due query of `pending`'s shard for minutes [first, last], under the claim's layout: the
  // minute's tick and the stored shards it reads (core/shard_layout.h).
  // REQUIRES: [first, last] is within one firing layout.
  DueQuery QueryFor(const Pending& pending, int64_t first, int64_t last) const;
  // Streams one query's due jobs into a new batch of `pending`, without waiting for acks. A debt
  // firing's query goes to the catch-up sink, paced.
  Status QueueQuery(const DueQuery& q, bool on_time, Pending* pending);
  // Renews the lease of `pending` if a third of it has passed. False (and the error recorded in
  // `pending`) if the lease is lost.
  bool RenewLeaseIfDue(Pending& pending);
  bool TopicAllowed(std::string_view topic);
  // A query's batch failed with `sent`; `*unacked` holds its Failures(). A broker error on a
  // topic that `streaks_` finds failing past its bound while others deliver counts as a record
  // error (reason topic_unavailable). If every failure is a record error, sends again alone
  // each failed trigger that a batch-mate may have spoiled (a size-type error in a topic with
  // more than one failure), dead-letters those refused again (or refused at once) through
  // `refusals_`, and returns Ok: the query is complete. Otherwise (any broker error, a failure
  // the batch could not list, a refusal not recorded) returns the error: the firing fails.
  // On return `*unacked` holds the failed triggers not yet delivered or dead-lettered (none on
  // Ok), which a retry must send again.
  Status SettleRecordErrors(std::vector<TriggerFailure>* unacked, const Status& sent, bool debt,
                            ShardMinuteReport* report);
  // What a query of a firing left unacknowledged, known completely (its batch tracked every
  // failure): kept in `unacked_` when the firing fails.
  struct Unacked {
    MinuteRange range;
    std::vector<TriggerFailure> triggers;
  };
  // A firing of `pending` failed: keeps what its queries left unacknowledged (`untracked` of them
  // could not tell), or drops the shard's entries if its lease was lost.
  void KeepUnacked(const Pending& pending, std::vector<Unacked> unacked, int untracked, bool lease_lost);
  // Drops the kept entries of `shard`: another node holds its lease and may fire it.
  void DropUnacked(int32_t shard);
  // Releases this node's claim of `shard` (its debt lease if `debt`), reporting a failure to the
  // observer (the lease then expires by itself).
  void ReleaseClaim(int32_t shard, bool debt = false);

  const SchedulerConfig& cfg_;
  const std::string node_id_;
  TriggerPathStore& store_;
  ShardLedger& ledger_;
  TriggerSink& sink_;
  TriggerSink& catch_up_sink_;
  RateLimiter* const catch_up_limiter_;
  int64_t paced_allowance_ = 0;  // catch-up tokens taken from the limiter and not used yet
  const TopicPolicy& policy_;
  Clock& clock_;
  SchedulerObserver& observer_;
  LayoutCell* const layout_cell_;
  TriggerRefusals* const refusals_;
  BrokerErrorStreaks* const streaks_;
  UnackedTriggers* const unacked_;
  struct TopicHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Policy cache, looked up by string_view without building a string per trigger.
  std::unordered_map<std::string, bool, TopicHash, std::equal_to<>> topic_allowed_;
};

}  // namespace belfry
