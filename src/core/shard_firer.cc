#include "core/shard_firer.h"

#include <utility>

#include "core/retry_policy.h"
#include "core/slot_math.h"

namespace belfry {

int64_t ShardFirer::Pending::triggers() const {
  int64_t n = 0;
  for (const Query& q : queries_) n += q.report.triggers;
  return n;
}

bool ShardFirer::Pending::Done() const {
  for (const Query& q : queries_) {
    if (!q.batch->Done()) return false;
  }
  return true;
}

void ShardFirer::Pending::NotifyWhenDone(const std::function<void()>& fn) {
  if (queries_.empty()) fn();  // nothing was queued (e.g. a plan that skips): done already
  for (Query& q : queries_) q.batch->NotifyWhenDone(fn);
}

ShardFirer::ShardFirer(const SchedulerConfig& cfg, std::string node_id, JobStore& store, ShardLedger& ledger,
                       TriggerSink& sink, const TopicPolicy& policy, Clock& clock,
                       SchedulerObserver& observer)
    : cfg_(cfg),
      node_id_(std::move(node_id)),
      store_(store),
      ledger_(ledger),
      sink_(sink),
      policy_(policy),
      clock_(clock),
      observer_(observer) {}

void ShardFirer::ReleaseClaim(int32_t shard) {
  if (Status st = ledger_.Release(shard, node_id_); !st.ok()) observer_.OnReleaseFailed(shard, st);
}

bool ShardFirer::TopicAllowed(std::string_view topic) {
  auto it = topic_allowed_.find(topic);
  if (it != topic_allowed_.end()) return it->second;
  if (topic_allowed_.size() > 10000) topic_allowed_.clear();  // bound the cache
  const bool allowed = policy_.Check(topic).ok();
  topic_allowed_.emplace(std::string(topic), allowed);
  return allowed;
}

Status ShardFirer::QueueQuery(const DueQuery& q, bool on_time, Pending* pending) {
  Pending::Query& out = pending->queries_.emplace_back();
  out.started = clock_.NowMs();
  ShardMinuteReport& report = out.report;
  report.shard = q.shard;
  report.first_minute = q.first_minute;
  report.last_minute = q.last_minute;
  report.coalesced = q.first_minute != q.last_minute;
  report.on_time = on_time;
  out.batch = sink_.NewBatch();
  TriggerBatch& batch = *out.batch;
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
    batch.Add(t);
    ++report.triggers;
  });
  report.query_ms = clock_.NowMs() - out.started;
  out.query_ok = query_status.ok();
  return query_status;
}

ShardFirer::Outcome ShardFirer::FireUpTo(int32_t shard, int64_t target_minute, Status* error) {
  Pending pending;
  const Outcome begun = Begin(shard, target_minute, &pending, error);
  if (begun != Outcome::kFired) return begun;
  return Complete(pending, error);
}

ShardFirer::Outcome ShardFirer::Begin(int32_t shard, int64_t target_minute, Pending* pending, Status* error) {
  auto fail = [&](Status st, bool release) {
    if (release) ReleaseClaim(shard);
    observer_.OnFiringFailed(shard, st);
    if (error) *error = std::move(st);
    return Outcome::kFailed;
  };
  StatusOr<ShardClaim> claim = ledger_.Claim(shard, target_minute, node_id_, cfg_.claim_lease_ms);
  if (!claim.ok()) return fail(claim.status(), false);
  if (!claim->claimed) return Outcome::kNotClaimed;

  const FiringPlan plan = PlanFiring(claim->fired_through, target_minute, shard, clock_.NowMs(), cfg_);
  if (plan.nothing_to_do) {
    ReleaseClaim(shard);
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
  *pending = Pending();
  pending->shard_ = shard;
  pending->hold_minute_ = hold_minute;
  pending->renewed_at_ = clock_.NowMs();
  pending->advance_to_ = plan.advance_to;
  pending->caught_up_ = MissedMinutesFired(plan);
  pending->skipped_ = plan.policy == MisfirePolicy::kSkip ? plan.missed.size() : 0;
  pending->too_old_ = plan.too_old;

  // Stops queuing at the first failure; Complete() still waits for what was queued.
  auto queue = [&](const DueQuery& q, bool on_time, bool renew) {
    if (Status st = QueueQuery(q, on_time, pending); !st.ok()) {
      pending->error_ = std::move(st);
      return false;
    }
    if (!renew) return true;
    if (Status st = ledger_.MarkFired(shard, hold_minute, node_id_, cfg_.claim_lease_ms, false); !st.ok()) {
      pending->error_ = std::move(st);
      pending->release_on_error_ = false;  // the claim is lost: nothing to release
      return false;
    }
    pending->renewed_at_ = clock_.NowMs();
    return true;
  };
  // Current slots first, so a catch-up never makes the present late; then the missed ones.
  bool ok = true;
  for (int64_t m = plan.on_time.first; ok && m <= plan.on_time.last; ++m) {
    ok = queue(DueQuery{shard, m, m, cfg_.tick_ms, TermsForMinute(cfg_.intervals, m)}, true, true);
  }
  if (ok && !plan.missed.empty()) {
    if (plan.policy == MisfirePolicy::kFireAll) {
      for (int64_t m = plan.missed.first; ok && m <= plan.missed.last; ++m) {
        ok = queue(DueQuery{shard, m, m, cfg_.tick_ms, TermsForMinute(cfg_.intervals, m)}, false, true);
      }
    } else if (plan.policy == MisfirePolicy::kCoalesce) {
      queue(DueQuery{shard, plan.missed.first, plan.missed.last, cfg_.tick_ms,
                     TermsForRange(cfg_.intervals, plan.missed.first, plan.missed.last)},
            false, false);
    }
  }
  return Outcome::kFired;
}

void ShardFirer::RenewIfDue(Pending& pending) {
  if (!pending.error_.ok()) return;
  const EpochMs now = clock_.NowMs();
  if (now - pending.renewed_at_ < cfg_.claim_lease_ms / 3) return;
  Status st = ledger_.MarkFired(pending.shard_, pending.hold_minute_, node_id_, cfg_.claim_lease_ms, false);
  if (!st.ok()) {
    pending.error_ = std::move(st);
    pending.release_on_error_ = false;
    return;
  }
  pending.renewed_at_ = now;
}

ShardFirer::Outcome ShardFirer::Complete(Pending& pending, Status* error) {
  const int32_t shard = pending.shard_;
  // Always wait for everything queued, even after a failure: the acks must not outlive us.
  Status first_error = pending.error_;
  for (Pending::Query& q : pending.queries_) {
    const Status sent = q.batch->Finish();
    if (!sent.ok() && first_error.ok()) first_error = sent;
    if (!sent.ok() || !q.query_ok) continue;
    const EpochMs acked = clock_.NowMs();
    q.report.total_ms = acked - q.started;
    q.report.lateness_ms = acked - SlotMs(q.report.last_minute, shard, cfg_.tick_ms);
    observer_.OnFired(q.report);
  }
  pending.queries_.clear();  // the batches are finished; drop their buffers now
  if (!first_error.ok()) {
    if (pending.release_on_error_) ReleaseClaim(shard);
    observer_.OnFiringFailed(shard, first_error);
    if (error) *error = std::move(first_error);
    return Outcome::kFailed;
  }
  if (Status st = ledger_.MarkFired(shard, pending.advance_to_, node_id_, cfg_.claim_lease_ms, true);
      !st.ok()) {
    observer_.OnFiringFailed(shard, st);
    if (error) *error = std::move(st);
    return Outcome::kFailed;
  }
  if (pending.caught_up_ > 0 || pending.skipped_ > 0 || pending.too_old_ > 0) {
    observer_.OnMissed(pending.caught_up_, pending.skipped_, pending.too_old_);
  }
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
    ReleaseClaim(shard);
    return Outcome::kNothingToDo;
  }
  if (Status st = ledger_.MarkFired(shard, minute, node_id_, cfg_.claim_lease_ms, true); !st.ok()) {
    ReleaseClaim(shard);
    if (error) *error = std::move(st);
    return Outcome::kFailed;
  }
  return Outcome::kFired;
}

}  // namespace belfry
