#include "core/shard_firer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/derived_row_id.h"
#include "core/layout_due_query.h"
#include "core/shard_layout.h"
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

ShardFirer::ShardFirer(const SchedulerConfig& cfg, std::string node_id, TriggerPathStore& store, ShardLedger& ledger,
                       TriggerSink& sink, TriggerSink& catch_up_sink, RateLimiter* catch_up_limiter,
                       const TopicPolicy& policy, Clock& clock, SchedulerObserver& observer, LayoutCell* layout,
                       TriggerRefusals* refusals, BrokerErrorStreaks* streaks, UnackedTriggers* unacked)
    : cfg_(cfg),
      node_id_(std::move(node_id)),
      store_(store),
      ledger_(ledger),
      sink_(sink),
      catch_up_sink_(catch_up_sink),
      catch_up_limiter_(catch_up_limiter),
      policy_(policy),
      clock_(clock),
      observer_(observer),
      layout_cell_(layout),
      refusals_(refusals),
      streaks_(streaks),
      unacked_(unacked) {}

void ShardFirer::ReleaseClaim(int32_t shard, bool debt) {
  Status st = debt ? ledger_.ReleaseDebt(shard, node_id_) : ledger_.Release(shard, node_id_);
  if (!st.ok()) observer_.OnReleaseFailed(shard, st);
}

ShardFirer::ShardFirer(const SchedulerConfig& cfg, std::string node_id, TriggerPathStore& store, ShardLedger& ledger,
                       TriggerSink& sink, const TopicPolicy& policy, Clock& clock,
                       SchedulerObserver& observer)
    : ShardFirer(cfg, std::move(node_id), store, ledger, sink, sink, nullptr, policy, clock, observer) {}

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
  const bool paced = pending->debt_ && catch_up_limiter_ != nullptr && !catch_up_limiter_->unlimited();
  out.batch = (pending->debt_ ? catch_up_sink_ : sink_).NewBatch();
  TriggerBatch& batch = *out.batch;
  if (unacked_ != nullptr) {
    // A retry of a range this node fired and failed: only what was not acknowledged goes again.
    std::string_view why;
    if (std::optional<std::vector<TriggerFailure>> kept =
            unacked_->Take(pending->shard_, MinuteRange{q.first_minute, q.last_minute}, pending->layout_, &why)) {
      for (const TriggerFailure& f : *kept) batch.Resend(f);
      report.triggers = static_cast<int64_t>(kept->size());
      report.query_ms = 0;
      out.query_ok = true;
      observer_.OnUnackedResent(report.triggers);
      return Status::Ok();
    }
    if (!why.empty()) observer_.OnUnackedRequery(why);
  }
  bool stopped = false;
  const Status query_status = store_.ForEachDueJob(q, [&](const DueJob& job) {
    if (stopped) return;
    if (paced && paced_allowance_ <= 0) {
      // A long wait must not let the debt lease lapse; a stop leaves the rest of the chunk owed.
      if (!RenewLeaseIfDue(*pending) || !catch_up_limiter_->Acquire(catch_up_limiter_->grant())) {
        stopped = true;
        return;
      }
      paced_allowance_ += catch_up_limiter_->grant();
    }
    if (!TopicAllowed(job.topic)) {
      ++report.refused;
      observer_.OnRefusedTopic(job.topic);
      return;
    }
    TriggerView t;
    t.job_id = job.id;
    if (job.scheduled_for_ms != 0) {  // a one-shot: maybe a row derived from another job
      if (const std::optional<DerivedRowRef> derived = ParseDerivedRowId(job.id)) {
        t.job_id = derived->job_id;
        t.attempt = derived->attempt;
        if (derived->kind != DerivedKind::kRetry) t.manual = DerivedKindName(derived->kind);
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
    if (paced) --paced_allowance_;
  });
  report.query_ms = clock_.NowMs() - out.started;
  if (stopped && query_status.ok()) {
    out.query_ok = false;
    return pending->error_.ok() ? Status::Retryable("stopped while pacing the catch-up") : pending->error_;
  }
  out.query_ok = query_status.ok();
  return query_status;
}

namespace {

// A broker that refuses a record batch for its size refuses every record in it: these reasons
// may hit a healthy trigger that shared a batch with the refused one.
bool MaySpoilBatchMates(const TriggerFailure& f) {
  return f.reason == "message_too_large" || f.reason == "invalid_record" || f.reason == "policy_violation";
}

}  // namespace

Status ShardFirer::SettleRecordErrors(std::vector<TriggerFailure>* unacked, const Status& sent, bool debt,
                                      ShardMinuteReport* report) {
  std::vector<TriggerFailure>& failures = *unacked;
  if (failures.empty()) return sent;  // a timeout or an untracked failure: a broker error
  bool broker_error = false;
  std::vector<size_t> unavailable;
  for (size_t i = 0; i < failures.size(); ++i) {
    const TriggerFailure& f = failures[i];
    if (f.kind == TriggerErrorKind::kRecord) continue;
    if (streaks_ != nullptr && streaks_->OnBrokerError(f.topic, clock_.NowMs())) {
      unavailable.push_back(i);  // this topic, not the broker, has been failing
      continue;
    }
    broker_error = true;
  }
  if (broker_error) return sent;  // every failure is retried as it was
  for (size_t i : unavailable) {
    TriggerFailure& f = failures[i];
    f.kind = TriggerErrorKind::kRecord;
    f.error = "topic unavailable past the bound: " + f.error;
    f.reason = "topic_unavailable";
  }
  std::map<std::string, int> spoilable_per_topic;
  for (const TriggerFailure& f : failures) {
    if (MaySpoilBatchMates(f)) ++spoilable_per_topic[f.topic];
  }
  for (size_t done = 0; done < failures.size(); ++done) {
    // On an error, what is not delivered or dead-lettered yet stays for the retry.
    auto fail = [&](Status st) {
      failures.erase(failures.begin(), failures.begin() + static_cast<std::ptrdiff_t>(done));
      return st;
    };
    TriggerFailure& f = failures[done];
    if (MaySpoilBatchMates(f) && spoilable_per_topic[f.topic] > 1) {
      // Alone, a healthy trigger goes through; a refused one is refused again.
      std::unique_ptr<TriggerBatch> alone = (debt ? catch_up_sink_ : sink_).NewBatch();
      alone->Resend(f);
      const Status again = alone->Finish();
      if (again.ok()) continue;
      std::vector<TriggerFailure> refused = alone->Failures();
      if (refused.size() != 1 || refused.front().kind != TriggerErrorKind::kRecord) return fail(again);
      f = std::move(refused.front());
    }
    if (refusals_ != nullptr) {
      if (Status st = refusals_->Record(f, clock_.NowMs()); !st.ok()) return fail(std::move(st));
    }
    ++report->undeliverable;
    observer_.OnTriggerRefused(f.reason);
  }
  failures.clear();
  return Status::Ok();
}

void ShardFirer::KeepUnacked(const Pending& pending, std::vector<Unacked> unacked, int untracked, bool lease_lost) {
  if (unacked_ == nullptr) return;
  if (lease_lost) {
    // Another node may fire these minutes now: the retry, whoever's, re-queries them.
    unacked_->DropShard(pending.shard_);
    observer_.OnUnackedRequery(UnackedTriggers::kClaimLost);
    return;
  }
  for (Unacked& u : unacked) {
    if (!unacked_->Keep(pending.shard_, u.range, pending.layout_, std::move(u.triggers))) {
      observer_.OnUnackedRequery(UnackedTriggers::kOverBound);
    }
  }
  for (int i = 0; i < untracked; ++i) observer_.OnUnackedRequery(UnackedTriggers::kUntracked);
}

void ShardFirer::DropUnacked(int32_t shard) {
  if (unacked_ != nullptr && unacked_->DropShard(shard) > 0) observer_.OnUnackedRequery(UnackedTriggers::kClaimLost);
}

DueQuery ShardFirer::QueryFor(const Pending& pending, int64_t first, int64_t last) const {
  DueQuery q = LayoutDueQuery(pending.layout_, cfg_.intervals, pending.shard_, first, last);
  q.read_fence = pending.read_fence_;
  return q;
}

ShardFirer::Outcome ShardFirer::FireUpTo(int32_t shard, int64_t target_minute, Status* error) {
  Pending pending;
  const Outcome begun = Begin(shard, target_minute, &pending, error);
  if (begun != Outcome::kFired) return begun;
  return Complete(pending, error);
}

ShardFirer::Outcome ShardFirer::FireDebt(int32_t shard, Status* error) {
  Pending pending;
  const Outcome begun = BeginDebt(shard, &pending, error);
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
  // Claimed or not, the claim read the layout: the node's ticker learns a cut-over from it.
  if (layout_cell_ != nullptr) layout_cell_->Offer(claim->layout);
  if (!claim->claimed) {
    // Not fired through the target yet: another node holds the claim.
    if (!claim->fired_through || *claim->fired_through < target_minute) DropUnacked(shard);
    return Outcome::kNotClaimed;
  }

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
  pending->read_fence_ = claim->read_fence;
  pending->layout_ = claim->layout;
  pending->hold_minute_ = hold_minute;
  pending->renewed_at_ = clock_.NowMs();
  pending->advance_to_ = plan.advance_to;
  pending->add_debt_ = DebtToAdd(plan);
  pending->skipped_ = plan.policy == MisfirePolicy::kSkip ? plan.missed.size() : 0;
  pending->too_old_ = plan.too_old;

  // Only the present: the missed minutes become debt when this firing is recorded, so a
  // catch-up never holds this shard's next slot (or any other shard's) back.
  for (int64_t m = plan.on_time.first; m <= plan.on_time.last; ++m) {
    if (!FiresInMinute(pending->layout_, m, shard)) continue;  // a new shard fires only from the cut-over
    if (Status st = QueueQuery(QueryFor(*pending, m, m), true, pending); !st.ok()) {
      pending->error_ = std::move(st);
      break;
    }
    if (Status st = ledger_.MarkFired(shard, hold_minute, node_id_, cfg_.claim_lease_ms, false); !st.ok()) {
      pending->error_ = std::move(st);
      pending->release_on_error_ = false;  // the claim is lost: nothing to release
      break;
    }
    pending->renewed_at_ = clock_.NowMs();
  }
  return Outcome::kFired;
}

ShardFirer::Outcome ShardFirer::BeginDebt(int32_t shard, Pending* pending, Status* error) {
  StatusOr<DebtClaim> claim = ledger_.ClaimDebt(shard, node_id_, cfg_.claim_lease_ms);
  if (!claim.ok()) {
    observer_.OnFiringFailed(shard, claim.status());
    if (error) *error = claim.status();
    return Outcome::kFailed;
  }
  if (!claim->claimed) {
    DropUnacked(shard);  // another node holds the debt lease (or nothing is owed)
    return Outcome::kNotClaimed;
  }
  DebtChunk chunk = PlanDebtChunk(claim->lowest, cfg_);
  if (chunk.coalesced && !chunk.fire.empty()) {
    // One query covers one firing layout: a range that spans a reshard's cut-over stops before
    // it, and the rest stays owed for the next debt firing.
    const int64_t last = LastMinuteOfSameLayout(claim->layout, chunk.fire.first, chunk.fire.last);
    if (last < chunk.fire.last) {
      chunk.fire.last = last;
      chunk.settle.last = std::min(chunk.settle.last, last);
    }
  }
  *pending = Pending();
  pending->shard_ = shard;
  pending->debt_ = true;
  pending->read_fence_ = claim->read_fence;
  pending->layout_ = claim->layout;
  if (layout_cell_ != nullptr) layout_cell_->Offer(claim->layout);
  pending->renewed_at_ = clock_.NowMs();
  pending->settle_ = chunk.settle;
  pending->caught_up_ = chunk.fire.size();
  pending->skipped_ = chunk.skipped;
  if (chunk.fire.empty()) return Outcome::kFired;
  if (chunk.coalesced) {
    if (Status st = QueueQuery(QueryFor(*pending, chunk.fire.first, chunk.fire.last), false, pending); !st.ok()) {
      pending->error_ = std::move(st);
    }
    return Outcome::kFired;
  }
  for (int64_t m = chunk.fire.first; m <= chunk.fire.last; ++m) {
    if (!FiresInMinute(pending->layout_, m, shard)) continue;
    if (Status st = QueueQuery(QueryFor(*pending, m, m), false, pending); !st.ok()) {
      if (pending->error_.ok()) pending->error_ = std::move(st);
      break;
    }
    pending->renewed_at_ = 0;  // renew after each query, as Begin does
    if (!RenewLeaseIfDue(*pending)) break;
  }
  return Outcome::kFired;
}

bool ShardFirer::RenewLeaseIfDue(Pending& pending) {
  if (!pending.error_.ok()) return false;
  const EpochMs now = clock_.NowMs();
  if (now - pending.renewed_at_ < cfg_.claim_lease_ms / 3) return true;
  Status st = pending.debt_ ? ledger_.RenewDebt(pending.shard_, node_id_, cfg_.claim_lease_ms)
                            : ledger_.MarkFired(pending.shard_, pending.hold_minute_, node_id_,
                                                cfg_.claim_lease_ms, false);
  if (!st.ok()) {
    pending.error_ = std::move(st);
    pending.release_on_error_ = false;
    return false;
  }
  pending.renewed_at_ = now;
  return true;
}

void ShardFirer::RenewIfDue(Pending& pending) { RenewLeaseIfDue(pending); }

ShardFirer::Outcome ShardFirer::Complete(Pending& pending, Status* error) {
  const int32_t shard = pending.shard_;
  // Always wait for everything queued, even after a failure: the acks must not outlive us.
  Status first_error = pending.error_;
  bool delivered = false;  // some trigger of a query without a broker error was acknowledged
  std::vector<Unacked> unacked;  // per query, when its batch could tell
  int untracked = 0;
  for (Pending::Query& q : pending.queries_) {
    Status sent = q.batch->Finish();
    std::vector<TriggerFailure> failed;
    bool tracked = true;
    if (!sent.ok()) {
      failed = q.batch->Failures();
      tracked = !failed.empty();
      sent = SettleRecordErrors(&failed, sent, pending.debt_, &q.report);
    }
    if (q.query_ok) {
      if (tracked) {
        unacked.push_back({MinuteRange{q.report.first_minute, q.report.last_minute}, std::move(failed)});
      } else {
        ++untracked;
      }
    }
    if (!sent.ok() && first_error.ok()) first_error = sent;
    if (!sent.ok() || !q.query_ok) continue;
    delivered |= q.report.triggers > q.report.undeliverable;
    const EpochMs acked = clock_.NowMs();
    q.report.total_ms = acked - q.started;
    q.report.lateness_ms = acked - LayoutSlotMs(pending.layout_, q.report.last_minute, shard);
    observer_.OnFired(q.report);
    // The present's lateness steers the catch-up's pace (CatchUpGovernor).
    if (!pending.debt_ && catch_up_limiter_ != nullptr && !catch_up_limiter_->unlimited()) {
      observer_.OnCatchUpRate(catch_up_limiter_->OnOnTimeFired(q.report.lateness_ms));
    }
  }
  pending.queries_.clear();  // the batches are finished; drop their buffers now
  // Deliveries prove the broker up: a topic failing meanwhile is the topic's problem.
  if (delivered && streaks_ != nullptr) streaks_->OnDelivered(clock_.NowMs());
  if (!first_error.ok()) {
    KeepUnacked(pending, std::move(unacked), untracked, !pending.release_on_error_);
    if (pending.release_on_error_) ReleaseClaim(shard, pending.debt_);
    observer_.OnFiringFailed(shard, first_error);
    if (error) *error = std::move(first_error);
    return Outcome::kFailed;
  }
  // One statement each: a crash before it leaves the shard as it was, to be planned again.
  if (Status st = pending.debt_ ? ledger_.SettleDebt(shard, pending.settle_, node_id_)
                                : ledger_.Advance(shard, pending.advance_to_, pending.add_debt_, node_id_);
      !st.ok()) {
    // Everything was acknowledged: a retry by this node re-sends nothing, unless the lease is lost.
    KeepUnacked(pending, std::move(unacked), untracked, st.code() == Status::Code::kFailedPrecondition);
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
