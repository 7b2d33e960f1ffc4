#include "core/shard_firer.h"

#include <memory>
#include <utility>

#include "core/retry_policy.h"
#include "core/slot_math.h"

namespace belfry {

ShardFirer::ShardFirer(const SchedulerConfig& cfg, std::string node_id, JobStore& store, ShardLedger& ledger,
                       TriggerSink& sink, const TopicPolicy& policy, Clock& clock, SchedulerObserver& observer)
    : cfg_(cfg),
      node_id_(std::move(node_id)),
      store_(store),
      ledger_(ledger),
      sink_(sink),
      policy_(policy),
      clock_(clock),
      observer_(observer) {}

bool ShardFirer::TopicAllowed(std::string_view topic) {
  auto it = topic_allowed_.find(std::string(topic));
  if (it != topic_allowed_.end()) return it->second;
  if (topic_allowed_.size() > 10000) topic_allowed_.clear();  // bound the cache
  const bool allowed = policy_.Check(topic).ok();
  topic_allowed_.emplace(std::string(topic), allowed);
  return allowed;
}

Status ShardFirer::FireQuery(const DueQuery& q, bool on_time) {
  const EpochMs started = clock_.NowMs();
  ShardMinuteReport report;
  report.shard = q.shard;
  report.first_minute = q.first_minute;
  report.last_minute = q.last_minute;
  report.coalesced = q.first_minute != q.last_minute;
  report.on_time = on_time;
  std::unique_ptr<TriggerBatch> batch = sink_.NewBatch();
  const Status query_status = store_.ForEachDueJob(q, [&](const DueJob& job) {
    if (!TopicAllowed(job.topic)) {
      ++report.refused;
      observer_.OnRefusedTopic(job.topic);
      return;
    }
    TriggerView t;
    t.job_id = job.id;
    if (job.scheduled_for_ms != 0) {  // a one-shot: maybe a scheduled retry of another job
      if (const std::optional<RetryRowRef> retry = ParseRetryRowId(job.id)) {
        t.job_id = retry->job_id;
        t.attempt = retry->attempt;
      }
    }
    t.topic = job.topic;
    t.key = job.key.empty() ? t.job_id : job.key;
    t.details_json = job.details_json;
    t.interval_minutes = job.interval_minutes;
    t.scheduled_for_ms =
        job.scheduled_for_ms != 0 ? job.scheduled_for_ms : SlotMs(job.due_minute, q.shard, q.tick_ms);
    batch->Add(t);
    ++report.triggers;
  });
  const EpochMs queried = clock_.NowMs();
  // Always wait for what was queued, even after a query failure: the acks must not outlive us.
  const Status send_status = batch->Finish();
  if (!query_status.ok()) return query_status;
  if (!send_status.ok()) return send_status;
  const EpochMs acked = clock_.NowMs();
  report.query_ms = queried - started;
  report.total_ms = acked - started;
  report.lateness_ms = acked - SlotMs(q.last_minute, q.shard, q.tick_ms);
  observer_.OnFired(report);
  return Status::Ok();
}

ShardFirer::Outcome ShardFirer::FireUpTo(int32_t shard, int64_t target_minute, Status* error) {
  auto fail = [&](Status st, bool release) {
    if (release) ledger_.Release(shard, node_id_);
    observer_.OnFiringFailed(shard, st);
    if (error) *error = std::move(st);
    return Outcome::kFailed;
  };
  StatusOr<ShardClaim> claim = ledger_.Claim(shard, target_minute, node_id_, cfg_.claim_lease_ms);
  if (!claim.ok()) return fail(claim.status(), false);
  if (!claim->claimed) return Outcome::kNotClaimed;

  const FiringPlan plan = PlanFiring(claim->fired_through, target_minute, shard, clock_.NowMs(), cfg_);
  if (plan.nothing_to_do) {
    ledger_.Release(shard, node_id_);
    return Outcome::kNothingToDo;
  }
  // The lease is renewed after each query without moving the watermark (MarkFired never moves
  // it backwards), so that the watermark only advances once everything in the plan is acked.
  const int64_t hold_minute = claim->fired_through ? *claim->fired_through : plan.advance_to - 1;
  if (!claim->fired_through) {
    // A shard that never fired gets its watermark now, so that if this first firing fails the
    // catch-up scan sees the shard as behind and retries it.
    if (Status st = ledger_.MarkFired(shard, hold_minute, node_id_, cfg_.claim_lease_ms, false); !st.ok()) {
      return fail(st, true);
    }
  }
  auto renew = [&]() { return ledger_.MarkFired(shard, hold_minute, node_id_, cfg_.claim_lease_ms, false); };

  // Current slots first, so a catch-up never makes the present late; then the missed ones.
  for (int64_t m = plan.on_time.first; m <= plan.on_time.last; ++m) {
    DueQuery q{shard, m, m, cfg_.tick_ms, TermsForMinute(cfg_.intervals, m)};
    if (Status st = FireQuery(q, true); !st.ok()) return fail(st, true);
    if (Status st = renew(); !st.ok()) return fail(st, false);
  }
  const int64_t caught_up = MissedMinutesFired(plan);
  if (!plan.missed.empty()) {
    if (plan.policy == MisfirePolicy::kFireAll) {
      for (int64_t m = plan.missed.first; m <= plan.missed.last; ++m) {
        DueQuery q{shard, m, m, cfg_.tick_ms, TermsForMinute(cfg_.intervals, m)};
        if (Status st = FireQuery(q, false); !st.ok()) return fail(st, true);
        if (Status st = renew(); !st.ok()) return fail(st, false);
      }
    } else if (plan.policy == MisfirePolicy::kCoalesce) {
      DueQuery q{shard, plan.missed.first, plan.missed.last, cfg_.tick_ms,
                 TermsForRange(cfg_.intervals, plan.missed.first, plan.missed.last)};
      if (Status st = FireQuery(q, false); !st.ok()) return fail(st, true);
    }
  }
  if (Status st = ledger_.MarkFired(shard, plan.advance_to, node_id_, cfg_.claim_lease_ms, true); !st.ok()) {
    return fail(st, false);
  }
  const int64_t skipped = plan.policy == MisfirePolicy::kSkip ? plan.missed.size() : 0;
  if (caught_up > 0 || skipped > 0 || plan.too_old > 0) observer_.OnMissed(caught_up, skipped, plan.too_old);
  return Outcome::kFired;
}

ShardFirer::Outcome ShardFirer::StartWatermark(int32_t shard, int64_t minute, Status* error) {
  StatusOr<ShardClaim> claim = ledger_.Claim(shard, minute, node_id_, cfg_.claim_lease_ms);
  if (!claim.ok()) {
    if (error) *error = claim.status();
    return Outcome::kFailed;
  }
  if (!claim->claimed) return Outcome::kNotClaimed;
  if (claim->fired_through) {
    // It fired an earlier minute meanwhile: the catch-up scan owns it from here; never move an
    // existing watermark past slots nobody fired.
    ledger_.Release(shard, node_id_);
    return Outcome::kNothingToDo;
  }
  if (Status st = ledger_.MarkFired(shard, minute, node_id_, cfg_.claim_lease_ms, true); !st.ok()) {
    ledger_.Release(shard, node_id_);
    if (error) *error = std::move(st);
    return Outcome::kFailed;
  }
  return Outcome::kFired;
}

}  // namespace belfry
