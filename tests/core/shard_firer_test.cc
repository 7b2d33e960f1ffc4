#include "core/shard_firer.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/shard_hash.h"
#include "scheduler_sim.h"

namespace belfry {
namespace {

constexpr int64_t kM = 29922577;

class ShardFirerTest : public FiringFakes {
 protected:
  ShardFirerTest()
      : FiringFakes(SlotMs(kM, 0, 500)),
        firer_(cfg_, "node-a", store_, ledger_, sink_, policy_, clock_, observer_) {}

  ShardFirer firer_;
};

TEST_F(ShardFirerTest, RecordsFiredOnlyAfterAcks) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 1);
  sink_.FailNextBatches(1);
  Status err;
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM, &err), ShardFirer::Outcome::kFailed);
  EXPECT_TRUE(err.retryable());
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM - 1);
  // The claim was released: the next attempt (any node) can fire it.
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM);
  ASSERT_EQ(sink_.sent().size(), 1u);
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kNotClaimed);
}

// A standby may serve a query only once it has replayed past the claim's fence, so every query
// of a firing, on-time and debt, must carry the fence of the claim it fires under.
TEST_F(ShardFirerTest, EveryQueryCarriesItsClaimsReadFence) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 1);
  ASSERT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFired);
  const int64_t on_time_fence = ledger_.last_read_fence();
  EXPECT_GT(on_time_fence, 0);
  EXPECT_EQ(store_.read_fences(), std::vector<int64_t>{on_time_fence});

  // Fall three minutes behind: the next firing leaves two minutes of debt, fired in a debt firing.
  clock_.Set(SlotMs(kM + 3, s.shard, cfg_.tick_ms));
  ASSERT_EQ(firer_.FireUpTo(s.shard, kM + 3), ShardFirer::Outcome::kFired);
  ASSERT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kFired);
  const int64_t debt_fence = ledger_.last_read_fence();
  const std::vector<int64_t> fences = store_.read_fences();
  ASSERT_GE(fences.size(), 3u);
  EXPECT_EQ(fences[1], on_time_fence + 1);
  for (size_t i = 2; i < fences.size(); ++i) EXPECT_EQ(fences[i], debt_fence) << i;
  EXPECT_EQ(debt_fence, on_time_fence + 2);
}

// During a reshard's move, an old shard's firing reads every partition it splits into, so a job
// already moved to its new shard still fires, once, at the old shard's slot; from the cut-over,
// the new shard fires it at its own slot, with the new tick (docs/resharding.md).
TEST_F(ShardFirerTest, AcrossAReshardAJobFiresOnceAtItsLayoutsSlot) {
  // A job of old shard s whose new shard is s + 120: it has moved.
  std::string id;
  for (int i = 0; id.empty(); ++i) {
    const std::string candidate = "mover-" + std::to_string(i);
    if (ShardForId(candidate, 240) >= 120) id = candidate;
  }
  const int32_t old_shard = ShardForId(id, 120);
  const int32_t new_shard = ShardForId(id, 240);
  JobSpec s = MakeJob(id, 1, 0);
  s.shard = new_shard;  // stored under the new layout: the move has passed its old shard
  store_.Put(s);
  ledger_.SetLayout(ShardLayout{120, 240, ShardLayout::Phase::kMoving, old_shard, 0});
  ledger_.SetFiredThrough(old_shard, kM - 1);
  clock_.Set(SlotMs(kM, old_shard, 500));
  ASSERT_EQ(firer_.FireUpTo(old_shard, kM), ShardFirer::Outcome::kFired);
  ASSERT_EQ(sink_.sent().size(), 1u);
  EXPECT_EQ(sink_.sent()[0].scheduled_for_ms, SlotMs(kM, old_shard, 500));

  // Cut over at kM + 1: the new shard fires it at its own slot, 250 ms apart.
  const ShardLayout cut{120, 240, ShardLayout::Phase::kCutover, 119, kM + 1};
  ledger_.SetLayout(cut);
  ledger_.SetFiredThrough(new_shard, kM);
  clock_.Set(SlotMs(kM + 1, new_shard, 250));
  ASSERT_EQ(firer_.FireUpTo(new_shard, kM + 1), ShardFirer::Outcome::kFired);
  ASSERT_EQ(sink_.sent().size(), 2u);
  EXPECT_EQ(sink_.sent()[1].scheduled_for_ms, SlotMs(kM + 1, new_shard, 250));
  // The old shard's row, firing as new shard old_shard in kM + 1, does not fire it again.
  ledger_.SetFiredThrough(old_shard, kM);
  clock_.Set(SlotMs(kM + 1, old_shard, 250));
  ASSERT_NE(firer_.FireUpTo(old_shard, kM + 1), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(sink_.sent().size(), 2u);
}

TEST_F(ShardFirerTest, QueryFailureRecordsNothing) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 1);
  store_.FailNextQueries(1);
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM - 1);
}

TEST_F(ShardFirerTest, AFailedReleaseIsReportedAndTheLeaseExpiresInstead) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 1);
  sink_.FailNextBatches(1);
  ledger_.FailReleases(true);
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(observer_.failures, 1);
  EXPECT_EQ(observer_.release_failures, 1);
  // The claim is still ours until its lease ends; after that the shard fires as usual.
  ledger_.FailReleases(false);
  ShardFirer other(cfg_, "node-b", store_, ledger_, sink_, policy_, clock_, observer_);
  EXPECT_EQ(other.FireUpTo(s.shard, kM), ShardFirer::Outcome::kNotClaimed);
  clock_.Advance(cfg_.claim_lease_ms + 1);
  EXPECT_EQ(other.FireUpTo(s.shard, kM + 1), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM + 1);
}

TEST_F(ShardFirerTest, AnotherNodesLiveClaimBlocks) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ASSERT_TRUE(ledger_.Claim(s.shard, kM, "node-b", 3000)->claimed);
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kNotClaimed);
  clock_.Advance(3001);  // node-b died: its lease runs out
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.sent().size(), 1u);
}

TEST_F(ShardFirerTest, AFiringBehindFiresThePresentAndLeavesTheMissedMinutesAsDebt) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 4);
  clock_.Set(SlotMs(kM, s.shard, 500));
  EXPECT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFired);
  ASSERT_EQ(sink_.sent().size(), 1u);  // the present only
  EXPECT_EQ(sink_.sent()[0].scheduled_for_ms, SlotMs(kM, s.shard, 500));
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM);  // the watermark races ahead
  EXPECT_EQ(ledger_.Debt(s.shard), (std::set<int64_t>{kM - 3, kM - 2, kM - 1}));
  EXPECT_EQ(observer_.caught_up, 0);
  // Debt firings pay it off, oldest first, a minute at a time, with the original slots.
  for (int64_t m = kM - 3; m <= kM - 1; ++m) {
    EXPECT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kFired);
    EXPECT_EQ(sink_.sent().back().scheduled_for_ms, SlotMs(m, s.shard, 500));
  }
  EXPECT_TRUE(ledger_.Debt(s.shard).empty());
  EXPECT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kNotClaimed);  // nothing owed
  EXPECT_EQ(sink_.sent().size(), 4u);
  EXPECT_EQ(observer_.caught_up, 3);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM);
}

TEST_F(ShardFirerTest, DebtFiringsGoToTheCatchUpSinkAndTheirOwnLease) {
  FakeTriggerSink catch_up_sink;
  ShardFirer firer(cfg_, "node-a", store_, ledger_, sink_, catch_up_sink, nullptr, policy_, clock_,
                   observer_);
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 3);
  clock_.Set(SlotMs(kM, s.shard, 500));
  ASSERT_EQ(firer.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFired);
  catch_up_sink.HoldAcks();
  ShardFirer::Pending debt;
  ASSERT_EQ(firer.BeginDebt(s.shard, &debt), ShardFirer::Outcome::kFired);
  EXPECT_TRUE(debt.debt());
  EXPECT_EQ(catch_up_sink.batches_created(), 1);
  // Another node cannot take the same chunk while this one is open...
  EXPECT_FALSE(ledger_.ClaimDebt(s.shard, "node-b", 3000)->claimed);
  // ... but the shard's present is free: the next minute fires (on the on-time sink) meanwhile.
  clock_.Set(SlotMs(kM + 1, s.shard, 500));
  EXPECT_EQ(firer.FireUpTo(s.shard, kM + 1), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM + 1);
  ASSERT_EQ(sink_.sent().size(), 2u);
  EXPECT_EQ(sink_.sent()[1].scheduled_for_ms, SlotMs(kM + 1, s.shard, 500));
  catch_up_sink.ReleaseAcks();
  EXPECT_EQ(firer.Complete(debt), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.Debt(s.shard), (std::set<int64_t>{kM - 1}));
  ASSERT_EQ(catch_up_sink.sent().size(), 1u);
  EXPECT_EQ(catch_up_sink.sent()[0].scheduled_for_ms, SlotMs(kM - 2, s.shard, 500));
}

TEST_F(ShardFirerTest, ACoalesceDebtFiringFiresTheWholeLowestRangeOnce) {
  cfg_.misfire_policy = MisfirePolicy::kCoalesce;
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 5);
  ledger_.AddDebt(s.shard, MinuteRange{kM - 20, kM - 18});  // an older outage, separate range
  clock_.Set(SlotMs(kM, s.shard, 500));
  ASSERT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.Debt(s.shard).size(), 7u);
  ASSERT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kFired);
  ASSERT_EQ(sink_.sent().size(), 2u);
  EXPECT_EQ(sink_.sent()[1].scheduled_for_ms, SlotMs(kM - 18, s.shard, 500));  // the latest in the range
  EXPECT_EQ(ledger_.Debt(s.shard), (std::set<int64_t>{kM - 4, kM - 3, kM - 2, kM - 1}));
  ASSERT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.sent().size(), 3u);
  EXPECT_TRUE(ledger_.Debt(s.shard).empty());
  EXPECT_EQ(observer_.caught_up, 7);
}

TEST_F(ShardFirerTest, AFailedDebtFiringLeavesTheDebtOwedAndReleasesItsLease) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM);
  ledger_.AddDebt(s.shard, MinuteRange{kM - 2, kM - 1});
  clock_.Set(SlotMs(kM, s.shard, 500) + 1000);
  sink_.FailNextBatches(1);
  EXPECT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(ledger_.Debt(s.shard).size(), 2u);
  EXPECT_TRUE(ledger_.ClaimDebt(s.shard, "node-b", 3000)->claimed);  // released
  ASSERT_TRUE(ledger_.ReleaseDebt(s.shard, "node-b").ok());
  // A query failing part-way through a chunk: nothing settled either.
  cfg_.catch_up_chunk_minutes = 2;
  store_.FailQueriesAfter(1, 1);
  EXPECT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(ledger_.Debt(s.shard).size(), 2u);
  EXPECT_EQ(firer_.FireDebt(s.shard), ShardFirer::Outcome::kFired);  // both minutes at once
  EXPECT_TRUE(ledger_.Debt(s.shard).empty());
}

TEST_F(ShardFirerTest, DebtFiringsArePacedByTheLimiterAndKeepTheirLease) {
  StopSignal stop;
  RateLimiter limiter(10, clock_, stop);  // 10 triggers/s; the bucket holds one
  FakeTriggerSink catch_up_sink;
  ShardFirer firer(cfg_, "node-a", store_, ledger_, sink_, catch_up_sink, &limiter, policy_, clock_,
                   observer_);
  std::vector<JobSpec> jobs;
  for (int n = 0; jobs.size() < 50; ++n) {
    JobSpec j = MakeJob("p" + std::to_string(n), 1, 0);
    if (j.shard == 7) jobs.push_back(j);
  }
  for (const JobSpec& j : jobs) store_.Put(j);
  ledger_.SetFiredThrough(7, kM);
  ledger_.AddDebt(7, MinuteRange{kM - 1, kM - 1});
  clock_.Set(SlotMs(kM, 7, 500) + 1000);
  const EpochMs start = clock_.NowMs();
  ASSERT_EQ(firer.FireDebt(7), ShardFirer::Outcome::kFired);
  EXPECT_EQ(catch_up_sink.sent().size(), 50u);
  EXPECT_GE(clock_.NowMs() - start, 4800);  // 50 triggers at 10/s, less the bucket's one
  EXPECT_LE(clock_.NowMs() - start, 5100);
  EXPECT_TRUE(ledger_.Debt(7).empty());  // the lease outlived the 3 s it was taken for
  EXPECT_EQ(observer_.failures, 0);
}

TEST_F(ShardFirerTest, StartWatermarkRecordsWithoutFiringOnlyForNeverFiredShards) {
  store_.Put(MakeJob("s0-job", 1, 0));  // any shard: nothing may fire
  EXPECT_EQ(firer_.StartWatermark(7, kM - 1), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(7), kM - 1);
  EXPECT_TRUE(sink_.sent().empty());
  // The claim is released: another node can fire the shard's next minute.
  auto claim = ledger_.Claim(7, kM, "node-b", 3000);
  ASSERT_TRUE(claim.ok());
  EXPECT_TRUE(claim->claimed);
  ASSERT_TRUE(ledger_.Release(7, "node-b").ok());

  // A watermark that exists is never moved, not even forwards: those slots are owed.
  ledger_.SetFiredThrough(8, kM - 5);
  EXPECT_EQ(firer_.StartWatermark(8, kM - 1), ShardFirer::Outcome::kNothingToDo);
  EXPECT_EQ(ledger_.FiredThrough(8), kM - 5);
  claim = ledger_.Claim(8, kM, "node-b", 3000);  // and its claim was released
  ASSERT_TRUE(claim.ok());
  EXPECT_TRUE(claim->claimed);

  // Another node's live claim: left alone.
  ASSERT_TRUE(ledger_.Claim(9, kM, "node-b", 3000)->claimed);
  EXPECT_EQ(firer_.StartWatermark(9, kM - 1), ShardFirer::Outcome::kNotClaimed);
  EXPECT_FALSE(ledger_.FiredThrough(9).has_value());
}

TEST_F(ShardFirerTest, BeginQueuesButRecordsOnlyWhenCompleteSawEveryAck) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 3);
  clock_.Set(SlotMs(kM - 2, s.shard, 500) + 31'000);  // kM-2 is missed; kM-1 and kM are on time
  sink_.HoldAcks();
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(s.shard, kM, &pending), ShardFirer::Outcome::kFired);
  EXPECT_EQ(pending.shard(), s.shard);
  EXPECT_FALSE(pending.debt());
  EXPECT_EQ(pending.triggers(), 2);  // kM-1 and kM; kM-2 becomes debt
  EXPECT_EQ(sink_.batches_created(), 2);
  EXPECT_FALSE(pending.Done());
  // Queued but not acked: nothing is recorded and the claim is still held.
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM - 3);
  EXPECT_FALSE(ledger_.Claim(s.shard, kM, "node-b", 3000)->claimed);
  int wakeups = 0;
  pending.NotifyWhenDone([&wakeups] { ++wakeups; });
  EXPECT_EQ(wakeups, 0);
  EXPECT_TRUE(ledger_.Debt(s.shard).empty());  // recorded with the watermark, not before
  sink_.ReleaseAcks();
  EXPECT_EQ(wakeups, 2);  // once per query
  EXPECT_TRUE(pending.Done());
  EXPECT_EQ(firer_.Complete(pending), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM);
  EXPECT_EQ(ledger_.Debt(s.shard), (std::set<int64_t>{kM - 2}));
  EXPECT_EQ(sink_.sent().size(), 2u);
  EXPECT_EQ(observer_.fired.size(), 2u);
  // Released: the next minute is anyone's.
  EXPECT_TRUE(ledger_.Claim(s.shard, kM + 1, "node-b", 3000)->claimed);
}

TEST_F(ShardFirerTest, FailedAckInAnyQueryOfAPendingFiringRecordsNothing) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 2);
  clock_.Set(SlotMs(kM, s.shard, 500));
  sink_.FailNextBatches(1);  // the first query's batch: minute kM
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(s.shard, kM, &pending), ShardFirer::Outcome::kFired);
  Status err;
  EXPECT_EQ(firer_.Complete(pending, &err), ShardFirer::Outcome::kFailed);
  EXPECT_TRUE(err.retryable());
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM - 2);
  EXPECT_EQ(observer_.failures, 1);
  EXPECT_TRUE(ledger_.Claim(s.shard, kM, "node-b", 3000)->claimed);  // claim released
}

TEST_F(ShardFirerTest, QueryFailureMidPlanWaitsForWhatWasQueuedAndRecordsNothing) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 3);
  clock_.Set(SlotMs(kM - 2, s.shard, 500) + 1000);  // kM-2, kM-1 and kM all on time
  sink_.HoldAcks();
  store_.FailQueriesAfter(1, 1);  // kM-2 is queued, kM-1 fails: kM is never queried
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(s.shard, kM, &pending), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.batches_created(), 2);
  EXPECT_EQ(store_.queries(), 2);
  EXPECT_FALSE(pending.Done());
  sink_.ReleaseAcks();
  Status err;
  EXPECT_EQ(firer_.Complete(pending, &err), ShardFirer::Outcome::kFailed);
  EXPECT_TRUE(err.retryable());
  EXPECT_EQ(sink_.sent().size(), 1u);  // kM-2 went out (and will again: at-least-once)
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM - 3);
  EXPECT_TRUE(ledger_.Debt(s.shard).empty());
  EXPECT_TRUE(ledger_.Claim(s.shard, kM, "node-b", 3000)->claimed);
}

TEST_F(ShardFirerTest, RenewIfDueKeepsTheClaimOfAFiringWhoseAcksAreSlow) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 1);
  clock_.Set(SlotMs(kM, s.shard, 500));
  sink_.HoldAcks();
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(s.shard, kM, &pending), ShardFirer::Outcome::kFired);
  firer_.RenewIfDue(pending);  // too early: nothing to do
  clock_.Advance(999);
  firer_.RenewIfDue(pending);  // still under a third of the lease
  clock_.Advance(1);
  firer_.RenewIfDue(pending);  // renewed until begin + 1000 + 3000
  clock_.Advance(2500);        // past the lease Begin took, inside the renewed one
  EXPECT_FALSE(ledger_.Claim(s.shard, kM, "node-b", 3000)->claimed);
  sink_.ReleaseAcks();
  EXPECT_EQ(firer_.Complete(pending), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM);
}

TEST_F(ShardFirerTest, AFiringWhoseClaimLapsedAndWasTakenRecordsNothing) {
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 1);
  clock_.Set(SlotMs(kM, s.shard, 500));
  sink_.HoldAcks();
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(s.shard, kM, &pending), ShardFirer::Outcome::kFired);
  clock_.Advance(3001);  // no renewal: the lease lapses and node-b takes the shard
  ASSERT_TRUE(ledger_.Claim(s.shard, kM, "node-b", 3000)->claimed);
  firer_.RenewIfDue(pending);
  sink_.ReleaseAcks();
  EXPECT_EQ(firer_.Complete(pending), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM - 1);  // node-b owns it now
}

TEST_F(ShardFirerTest, APendingFiringThatQueuedNothingIsDoneAtOnce) {
  cfg_.misfire_policy = MisfirePolicy::kSkip;
  JobSpec s = MakeJob("j", 1, 0);
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 3);
  clock_.Set(SlotMs(kM, s.shard, 500) + 31'000);  // every minute is missed: skip them all
  sink_.HoldAcks();
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(s.shard, kM, &pending), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.batches_created(), 0);
  EXPECT_TRUE(pending.Done());
  int wakeups = 0;
  pending.NotifyWhenDone([&wakeups] { ++wakeups; });
  EXPECT_EQ(wakeups, 1);  // a pool waiting for this callback must not wait forever
  EXPECT_EQ(firer_.Complete(pending), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(s.shard), kM);
  EXPECT_EQ(observer_.skipped, 3);
}


// Records what the firer refuses, as TriggerDeadLetterer would; can be told to fail.
class RecordingRefusals final : public TriggerRefusals {
 public:
  Status Record(const TriggerFailure& f, EpochMs at_ms) override {
    if (fail_) return Status::Retryable("injected DLQ failure");
    refused.push_back({f.job_id, f.scheduled_for_ms});
    reasons.push_back(f.reason);
    last_at = at_ms;
    return Status::Ok();
  }
  bool fail_ = false;
  std::vector<std::pair<std::string, EpochMs>> refused;
  std::vector<std::string> reasons;
  EpochMs last_at = 0;
};

// Issue 33's scenario: one job whose topic refuses its trigger, among 20 healthy every-minute
// jobs of the same shard.
class UndeliverableTriggerTest : public FiringFakes {
 protected:
  UndeliverableTriggerTest()
      : FiringFakes(SlotMs(kM, 0, 500)),
        firer_(cfg_, "node-a", store_, ledger_, sink_, sink_, nullptr, policy_, clock_, observer_, nullptr,
               &refusals_) {
    for (int i = 0; static_cast<int>(healthy_.size()) < 21; ++i) {
      const std::string id = "job-" + std::to_string(i);
      if (ShardForId(id, 120) != kShard) continue;
      JobSpec s = MakeJob(id, 1, 0);
      s.topic = "out.shared";
      store_.Put(s);
      healthy_.push_back(id);
    }
    bad_ = healthy_.back();
    healthy_.pop_back();
    ledger_.SetFiredThrough(kShard, kM - 1);
    clock_.Set(SlotMs(kM, kShard, 500));
  }

  // How many times each job was sent and acknowledged.
  std::map<std::string, int> SentPerJob() const {
    std::map<std::string, int> n;
    for (const SentTrigger& t : sink_.sent()) ++n[t.job_id];
    return n;
  }

  static constexpr int32_t kShard = 7;
  RecordingRefusals refusals_;
  ShardFirer firer_;
  std::vector<std::string> healthy_;
  std::string bad_;
};

TEST_F(UndeliverableTriggerTest, ARecordErrorFailsOnlyItsTriggerAndTheShardMinuteCompletes) {
  sink_.RefuseJob(bad_, "message_too_large");
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM);
  EXPECT_EQ(observer_.failures, 0);
  const std::map<std::string, int> sent = SentPerJob();
  for (const std::string& id : healthy_) EXPECT_EQ(sent.count(id) ? sent.at(id) : 0, 1) << id;
  EXPECT_EQ(sent.count(bad_), 0u);
  ASSERT_EQ(refusals_.refused.size(), 1u);
  EXPECT_EQ(refusals_.refused[0], std::make_pair(bad_, SlotMs(kM, kShard, 500)));
  EXPECT_EQ(refusals_.reasons, std::vector<std::string>{"message_too_large"});
  EXPECT_EQ(observer_.undeliverable, std::vector<std::string>{"message_too_large"});
  EXPECT_EQ(sink_.resends(), 0) << "a lone failure in its topic is refused without a resend";
  ASSERT_EQ(observer_.fired.size(), 1u);
  EXPECT_EQ(observer_.fired[0].undeliverable, 1);

  // The next minute: the same again, once; nothing of the first minute repeats.
  clock_.Set(SlotMs(kM + 1, kShard, 500));
  ASSERT_EQ(firer_.FireUpTo(kShard, kM + 1), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM + 1);
  for (const auto& [id, n] : SentPerJob()) EXPECT_EQ(n, 2) << id;
  EXPECT_EQ(refusals_.refused.size(), 2u);
}

TEST_F(UndeliverableTriggerTest, HealthyTriggersSpoiledByARefusedBatchMateAreResentAlone) {
  sink_.RefuseJob(bad_, "message_too_large", /*spoils_batch=*/true);
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM);
  const std::map<std::string, int> sent = SentPerJob();
  for (const std::string& id : healthy_) EXPECT_EQ(sent.count(id) ? sent.at(id) : 0, 1) << id;
  EXPECT_EQ(sink_.resends(), 21) << "each failed trigger once, alone";
  ASSERT_EQ(refusals_.refused.size(), 1u);
  EXPECT_EQ(refusals_.refused[0].first, bad_);
}

TEST_F(UndeliverableTriggerTest, ABrokerErrorStillFailsTheShardMinute) {
  sink_.FailNextBatches(1);
  Status err;
  EXPECT_EQ(firer_.FireUpTo(kShard, kM, &err), ShardFirer::Outcome::kFailed);
  EXPECT_TRUE(err.retryable());
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM - 1);
  EXPECT_TRUE(refusals_.refused.empty());
}

TEST_F(UndeliverableTriggerTest, ARefusalThatCannotBeDeadLetteredFailsTheShardMinute) {
  sink_.RefuseJob(bad_, "topic_authorization");
  refusals_.fail_ = true;
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM - 1) << "no refused trigger is lost without its dead letter";
  refusals_.fail_ = false;
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM);
  EXPECT_EQ(refusals_.refused.size(), 1u);
}

// The second run: the poisoned oldest minute of the debt must settle, or later slots are
// never fired while earlier ones repeat.
TEST_F(UndeliverableTriggerTest, APoisonedDebtMinuteSettles) {
  sink_.RefuseJob(bad_, "message_too_large");
  ledger_.AddDebt(kShard, MinuteRange{kM - 3, kM - 1});
  clock_.Set(SlotMs(kM + 1, kShard, 500));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(firer_.FireDebt(kShard), ShardFirer::Outcome::kFired) << i;
  EXPECT_TRUE(ledger_.Debt(kShard).empty());
  for (const auto& [id, n] : SentPerJob()) EXPECT_EQ(n, 3) << id;
  EXPECT_EQ(refusals_.refused.size(), 3u);
  EXPECT_EQ(observer_.failures, 0);
}



// Issue 33 §1: after a broker error, a retry by the same node re-sends only the triggers that
// were not acknowledged (kept in memory, UnackedTriggers), never the acknowledged ones again.
class UnackedRetryTest : public FiringFakes {
 protected:
  UnackedRetryTest() : UnackedRetryTest(64ll << 20) {}
  explicit UnackedRetryTest(int64_t max_bytes)
      : FiringFakes(SlotMs(kM, 0, 500)),
        unacked_(clock_, max_bytes),
        firer_(cfg_, "node-a", store_, ledger_, sink_, sink_, nullptr, policy_, clock_, observer_, nullptr,
               &refusals_, nullptr, &unacked_) {
    for (int i = 0; static_cast<int>(jobs_.size()) < 20; ++i) {
      const std::string id = "u-" + std::to_string(i);
      if (ShardForId(id, 120) != kShard) continue;
      store_.Put(MakeJob(id, 1, 0));
      jobs_.push_back(id);
    }
    ledger_.SetFiredThrough(kShard, kM - 1);
    clock_.Set(SlotMs(kM, kShard, 500));
  }

  // How many times each job's trigger for `minute` was acknowledged.
  std::map<std::string, int> SentPerJob(int64_t minute) const {
    std::map<std::string, int> n;
    for (const SentTrigger& t : sink_.sent()) {
      if (t.scheduled_for_ms == SlotMs(minute, kShard, 500)) ++n[t.job_id];
    }
    return n;
  }
  int Duplicates(int64_t minute) const {
    int d = 0;
    for (const auto& [id, n] : SentPerJob(minute)) d += n - 1;
    return d;
  }

  static constexpr int32_t kShard = 7;
  RecordingRefusals refusals_;
  UnackedTriggers unacked_;
  ShardFirer firer_;
  std::vector<std::string> jobs_;
};

TEST_F(UnackedRetryTest, ARetryResendsOnlyTheTwoUnacknowledgedTriggers) {
  sink_.FailJobsOnce({jobs_[3], jobs_[11]});
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM - 1);
  EXPECT_EQ(SentPerJob(kM).size(), 18u);
  clock_.Advance(1500);  // the catch-up scan retries within the misfire threshold: on time again
  const int64_t queries = static_cast<int64_t>(store_.read_fences().size());
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger_.FiredThrough(kShard), kM);
  EXPECT_EQ(static_cast<int64_t>(store_.read_fences().size()), queries) << "the minute is not queried again";
  EXPECT_EQ(sink_.resends(), 2);
  EXPECT_EQ(observer_.resent, 2);
  const std::map<std::string, int> sent = SentPerJob(kM);
  for (const std::string& id : jobs_) EXPECT_EQ(sent.count(id) ? sent.at(id) : 0, 1) << id;
  EXPECT_EQ(Duplicates(kM), 0);
  EXPECT_EQ(unacked_.entries(), 0);
  EXPECT_EQ(unacked_.bytes(), 0);
}

TEST_F(UnackedRetryTest, ARetryFromTheDebtResendsOnlyTheUnacknowledgedTriggers) {
  sink_.FailJobsOnce({jobs_[0], jobs_[19]});
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  // The next slot: minute kM is past the misfire threshold now and becomes debt.
  clock_.Set(SlotMs(kM + 1, kShard, 500));
  ASSERT_EQ(firer_.FireUpTo(kShard, kM + 1), ShardFirer::Outcome::kFired);
  ASSERT_EQ(ledger_.Debt(kShard), std::set<int64_t>{kM});
  ASSERT_EQ(firer_.FireDebt(kShard), ShardFirer::Outcome::kFired);
  EXPECT_TRUE(ledger_.Debt(kShard).empty());
  EXPECT_EQ(sink_.resends(), 2);
  for (int64_t m : {kM, kM + 1}) {
    const std::map<std::string, int> sent = SentPerJob(m);
    for (const std::string& id : jobs_) EXPECT_EQ(sent.count(id) ? sent.at(id) : 0, 1) << id << " " << m;
  }
}

TEST_F(UnackedRetryTest, AMinuteWhoseQueriesAllDeliveredIsNotResentWhenAnotherFailed) {
  // Two on-time minutes in one firing; the first has a broker error, the second none.
  cfg_.misfire_threshold_ms = 600'000;
  clock_.Set(SlotMs(kM + 1, kShard, 500));
  sink_.HoldAcks();
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(kShard, kM + 1, &pending), ShardFirer::Outcome::kFired);
  sink_.ReleaseAcks();
  EXPECT_EQ(firer_.Complete(pending), ShardFirer::Outcome::kFired);  // no failure: a control run
  EXPECT_EQ(Duplicates(kM) + Duplicates(kM + 1), 0);
  ledger_.SetFiredThrough(kShard, kM - 1);
  sink_.Clear();
  sink_.FailJobsOnce({jobs_[5]});  // fails in minute kM's query; kM + 1's is acknowledged
  EXPECT_EQ(firer_.FireUpTo(kShard, kM + 1), ShardFirer::Outcome::kFailed);
  ASSERT_EQ(firer_.FireUpTo(kShard, kM + 1), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.resends(), 1);
  EXPECT_EQ(Duplicates(kM), 0);
  EXPECT_EQ(Duplicates(kM + 1), 0);
  EXPECT_EQ(SentPerJob(kM).size(), 20u);
  EXPECT_EQ(SentPerJob(kM + 1).size(), 20u);
}

TEST_F(UnackedRetryTest, AnUntrackedFailureReQueriesTheMinute) {
  sink_.FailNextBatches(1);  // a timeout: the batch cannot say which triggers failed
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(observer_.requeries, std::vector<std::string>{"untracked"});
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.resends(), 0);
  EXPECT_EQ(SentPerJob(kM).size(), 20u);
}

TEST_F(UnackedRetryTest, AFiringWhoseClaimWasLostKeepsNothingAndTheRetryReQueries) {
  sink_.FailJobsOnce({jobs_[3], jobs_[11]});
  sink_.HoldAcks();
  ShardFirer::Pending pending;
  ASSERT_EQ(firer_.Begin(kShard, kM, &pending), ShardFirer::Outcome::kFired);
  clock_.Advance(3001);  // the lease lapses and node-b takes the shard
  ASSERT_TRUE(ledger_.Claim(kShard, kM, "node-b", 3000)->claimed);
  firer_.RenewIfDue(pending);
  sink_.ReleaseAcks();
  EXPECT_EQ(firer_.Complete(pending), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(unacked_.entries(), 0);
  ASSERT_TRUE(ledger_.Release(kShard, "node-b").ok());  // node-b gives up without firing
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.resends(), 0);
  EXPECT_EQ(Duplicates(kM), 18) << "the whole minute again, as after a takeover";
  EXPECT_EQ(SentPerJob(kM).size(), 20u);
}

TEST_F(UnackedRetryTest, AnotherNodeHoldingTheClaimDropsWhatWasKept) {
  sink_.FailJobsOnce({jobs_[3], jobs_[11]});
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(unacked_.entries(), 1);
  ASSERT_TRUE(ledger_.Claim(kShard, kM, "node-b", 3000)->claimed);
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kNotClaimed);
  EXPECT_EQ(unacked_.entries(), 0);
  EXPECT_EQ(observer_.requeries, std::vector<std::string>{"claim_lost"});
  ASSERT_TRUE(ledger_.Release(kShard, "node-b").ok());
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.resends(), 0);
  EXPECT_EQ(SentPerJob(kM).size(), 20u);
}

TEST_F(UnackedRetryTest, ALayoutChangeReQueries) {
  sink_.FailJobsOnce({jobs_[3]});
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  ShardLayout moving;
  moving.from = 120;
  moving.to = 240;
  moving.phase = ShardLayout::Phase::kMoving;
  moving.moved_through = -1;
  ledger_.SetLayout(moving);
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.resends(), 0);
  EXPECT_EQ(observer_.requeries, std::vector<std::string>{"layout_changed"});
  EXPECT_EQ(SentPerJob(kM).size(), 20u);
}

// A node keeps at most its memory bound; what does not fit is re-queried, as before.
class UnackedOverBoundTest : public UnackedRetryTest {
 protected:
  UnackedOverBoundTest() : UnackedRetryTest(/*max_bytes=*/100) {}
};

TEST_F(UnackedOverBoundTest, WhatDoesNotFitIsReQueried) {
  sink_.FailJobsOnce({jobs_[3], jobs_[11]});
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  EXPECT_EQ(observer_.requeries, std::vector<std::string>{"over_bound"});
  EXPECT_EQ(unacked_.bytes(), 0);
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.resends(), 0);
  EXPECT_EQ(SentPerJob(kM).size(), 20u);
  EXPECT_EQ(Duplicates(kM), 18);
}

// A refused trigger whose dead letter could not be recorded, beside a broker error: the retry
// sends the two again, delivers one, dead-letters the other once, and nothing else repeats.
TEST_F(UnackedRetryTest, ARefusalNotRecordedIsRetriedAloneAndDeadLetteredOnce) {
  sink_.RefuseJob(jobs_[8], "message_too_large");
  refusals_.fail_ = true;
  EXPECT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFailed);
  refusals_.fail_ = false;
  ASSERT_EQ(firer_.FireUpTo(kShard, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(sink_.resends(), 1);
  EXPECT_EQ(refusals_.refused.size(), 1u);
  EXPECT_EQ(Duplicates(kM), 0);
  EXPECT_EQ(SentPerJob(kM).size(), 19u);
}

// A topic that fails with broker errors for longer than the bound while other triggers are
// delivered stops holding its shard: its trigger is dead-lettered as topic_unavailable.
TEST(UndeliverableTopicTest, ABrokerErrorLastingPastTheBoundBecomesARecordError) {
  SchedulerConfig cfg;
  cfg.misfire_threshold_ms = 600'000;  // the retried minute stays on time throughout
  FakeClock clock(SlotMs(kM, 7, 500));
  FakeJobStore store;
  FakeShardLedger ledger(120, clock);
  FakeTriggerSink sink;
  TopicPolicy policy({"*"}, {});
  RecordingObserver observer;
  RecordingRefusals refusals;
  BrokerErrorStreaks streaks(120'000, 60'000);
  ShardFirer firer(cfg, "node-a", store, ledger, sink, sink, nullptr, policy, clock, observer, nullptr, &refusals,
                   &streaks);
  std::string ok, dark;
  for (int i = 0; ok.empty() || dark.empty(); ++i) {
    const std::string id = "t-" + std::to_string(i);
    if (ShardForId(id, 120) != 7) continue;
    JobSpec s = MakeJob(id, 1, 0);
    if (ok.empty()) {
      ok = id;
    } else {
      dark = id;
      s.topic = "out.dark";
    }
    store.Put(s);
  }
  sink.RefuseJob(dark, "broker", false, TriggerErrorKind::kBroker);
  ledger.SetFiredThrough(7, kM - 1);
  EXPECT_EQ(firer.FireUpTo(7, kM), ShardFirer::Outcome::kFailed) << "a broker error holds the shard at first";
  for (int i = 0; i < 3; ++i) {  // other shards deliver; this one keeps failing on its dark topic
    clock.Advance(30'000);
    streaks.OnDelivered(clock.NowMs());
    EXPECT_EQ(firer.FireUpTo(7, kM), ShardFirer::Outcome::kFailed) << i;
  }
  clock.Advance(31'000);  // 121 s after the first error
  ASSERT_EQ(firer.FireUpTo(7, kM), ShardFirer::Outcome::kFired);
  EXPECT_EQ(ledger.FiredThrough(7), kM);
  EXPECT_EQ(refusals.reasons, std::vector<std::string>{"topic_unavailable"});
  EXPECT_EQ(refusals.refused.front().first, dark);
}

}  // namespace
}  // namespace belfry
