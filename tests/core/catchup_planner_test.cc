#include "core/catchup_planner.h"

#include <gtest/gtest.h>

#include "core/slot_math.h"

namespace belfry {
namespace {

constexpr int64_t kM = 29922577;  // 2026-11-22T13:37Z

SchedulerConfig Cfg(MisfirePolicy p) {
  SchedulerConfig c;
  c.misfire_policy = p;
  return c;
}

TEST(CatchupPlannerTest, NormalTickFiresJustTheMinute) {
  const auto plan = PlanFiring(kM - 1, kM, 10, SlotMs(kM, 10, 500) + 3, Cfg(MisfirePolicy::kFireAll));
  EXPECT_FALSE(plan.nothing_to_do);
  EXPECT_EQ(plan.on_time.first, kM);
  EXPECT_EQ(plan.on_time.last, kM);
  EXPECT_TRUE(plan.missed.empty());
  EXPECT_EQ(plan.too_old, 0);
  EXPECT_EQ(plan.advance_to, kM);
}

TEST(CatchupPlannerTest, AlreadyFiredIsNothingToDo) {
  const auto plan = PlanFiring(kM, kM, 10, SlotMs(kM, 10, 500), Cfg(MisfirePolicy::kFireAll));
  EXPECT_TRUE(plan.nothing_to_do);
}

TEST(CatchupPlannerTest, FreshShardStartsAtTarget) {
  const auto plan = PlanFiring(std::nullopt, kM, 10, SlotMs(kM, 10, 500), Cfg(MisfirePolicy::kFireAll));
  EXPECT_EQ(plan.on_time.size(), 1);
  EXPECT_TRUE(plan.missed.empty());
}

TEST(CatchupPlannerTest, FiveMinuteOutageUnderEachPolicy) {
  const EpochMs now = SlotMs(kM, 10, 500) + 100;
  for (MisfirePolicy p : {MisfirePolicy::kFireAll, MisfirePolicy::kCoalesce, MisfirePolicy::kSkip}) {
    const auto plan = PlanFiring(kM - 6, kM, 10, now, Cfg(p));
    EXPECT_EQ(plan.on_time.first, kM);
    EXPECT_EQ(plan.on_time.last, kM);
    EXPECT_EQ(plan.missed.first, kM - 5);
    EXPECT_EQ(plan.missed.last, kM - 1);
    EXPECT_EQ(plan.too_old, 0);
    EXPECT_EQ(DebtToAdd(plan).size(), p == MisfirePolicy::kSkip ? 0 : 5);
  }
}

TEST(CatchupPlannerTest, OlderThanMaxCatchupIsTooOld) {
  const EpochMs now = SlotMs(kM, 10, 500) + 100;
  const auto plan = PlanFiring(kM - 61, kM, 10, now, Cfg(MisfirePolicy::kFireAll));
  // Window is 15 minutes: kM-15's slot is 15 min + 100 ms ago, just outside it.
  EXPECT_EQ(plan.missed.first, kM - 14);
  EXPECT_EQ(plan.missed.last, kM - 1);
  EXPECT_EQ(plan.too_old, 46);  // kM-60 .. kM-15
  EXPECT_EQ(plan.advance_to, kM);
}

TEST(CatchupPlannerTest, LateTargetWithinThresholdIsOnTime) {
  // A takeover 3 s after the slot is not a misfire.
  const auto plan = PlanFiring(kM - 1, kM, 10, SlotMs(kM, 10, 500) + 3000, Cfg(MisfirePolicy::kSkip));
  EXPECT_EQ(plan.on_time.size(), 1);
  EXPECT_TRUE(plan.missed.empty());
}

TEST(CatchupPlannerTest, TargetItselfMissedBeyondThreshold) {
  const auto plan = PlanFiring(kM - 3, kM - 1, 10, SlotMs(kM - 1, 10, 500) + 45'000, Cfg(MisfirePolicy::kSkip));
  EXPECT_TRUE(plan.on_time.empty());
  EXPECT_EQ(plan.missed.first, kM - 2);
  EXPECT_EQ(plan.missed.last, kM - 1);
  EXPECT_EQ(plan.advance_to, kM - 1);
}

TEST(CatchupPlannerTest, HugeGapIsArithmeticNotALoop) {
  const auto plan = PlanFiring(0, kM, 10, SlotMs(kM, 10, 500), Cfg(MisfirePolicy::kFireAll));
  EXPECT_EQ(plan.too_old + plan.missed.size() + plan.on_time.size(), kM);
}

// During a reshard's cut-over the scan covers the new shards too, from the cut-over minute on,
// each with its own slot (docs/resharding.md).
TEST(CatchupPlannerTest, CatchUpRequestsFollowTheLayoutAcrossTheCutOver) {
  SchedulerConfig cfg;
  const ShardLayout l{120, 240, ShardLayout::Phase::kCutover, 119, kM};
  std::vector<ShardState> states(2);
  states[0].shard = 130;  // a new shard: slot 32.5 s in the new layout, watermark C - 1
  states[0].fired_through = kM - 1;
  states[1].shard = 7;    // an old shard: 3.5 s before C, 1.75 s from C
  states[1].fired_through = kM - 1;
  // 10 s into C: shard 7's slot of C has passed (and the grace), shard 130's has not.
  auto reqs = CatchUpRequests(states, SlotMs(kM, 0, 250) + 10'000, 2000, cfg, &l);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].shard, 7);
  EXPECT_EQ(reqs[0].minute, kM);
  reqs = CatchUpRequests(states, SlotMs(kM, 130, 250) + 2000, 2000, cfg, &l);
  ASSERT_EQ(reqs.size(), 2u);
  // Without the layout, shard 130 is not a shard at all.
  EXPECT_EQ(CatchUpRequests(states, SlotMs(kM, 130, 250) + 2000, 2000, cfg).size(), 1u);
}

TEST(CatchupPlannerTest, CatchUpRequestsSkipLiveClaimsAndFreshShards) {
  SchedulerConfig cfg;
  const EpochMs now = SlotMs(kM, 0, 500) + 30'000;  // half way through minute kM
  std::vector<ShardState> states(4);
  for (int i = 0; i < 3; ++i) states[i].shard = i * 40;  // shards 0, 40, 80
  states[0].fired_through = kM;           // shard 0 fired this minute: nothing
  states[1].fired_through = kM - 1;       // shard 40 (slot 20 s) is due this minute and not fired
  states[2].fired_through = kM - 5;       // shard 80 (slot 40 s): behind, due up to kM-1
  states[2].claim_live = true;            // ... but claimed by a live node
  states[3].shard = 60;
  states[3].fired_through = std::nullopt;  // never fired: left to the ticker
  auto reqs = CatchUpRequests(states, now, 2000, cfg);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].shard, 40);
  EXPECT_EQ(reqs[0].minute, kM);
  EXPECT_FALSE(reqs[0].on_time);
  states[2].claim_live = false;
  reqs = CatchUpRequests(states, now, 2000, cfg);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].shard, 80);
  EXPECT_EQ(reqs[1].minute, kM - 1);
}

TEST(CatchupPlannerTest, GraceLeavesJustPassedSlotsToTheTicker) {
  SchedulerConfig cfg;
  std::vector<ShardState> states(1);
  states[0].shard = 40;
  states[0].fired_through = kM - 1;
  EXPECT_TRUE(CatchUpRequests(states, SlotMs(kM, 40, 500) + 1999, 2000, cfg).empty());
  EXPECT_EQ(CatchUpRequests(states, SlotMs(kM, 40, 500) + 2000, 2000, cfg).size(), 1u);
}

TEST(CatchupPlannerTest, WatermarkStartsCoverOnlyUnclaimedNeverFiredShards) {
  SchedulerConfig cfg;
  const EpochMs now = SlotMs(kM, 0, 500) + 30'000;  // half way through minute kM
  std::vector<ShardState> states(4);
  states[0].shard = 0;
  states[0].fired_through = kM;  // has a watermark: not started again
  states[1].shard = 40;          // never fired, slot 20 s: passed this minute
  states[2].shard = 59;          // never fired, slot 29.5 s: within the 2 s grace
  states[3].shard = 80;          // never fired, slot 40 s: still to come this minute
  auto reqs = WatermarkStarts(states, now, 2000, cfg);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].shard, 40);
  EXPECT_EQ(reqs[0].minute, kM);  // its slot this minute counts as before the start
  EXPECT_EQ(reqs[1].shard, 59);
  EXPECT_EQ(reqs[1].minute, kM - 1);  // left to the ticker, which fires it on time
  EXPECT_EQ(reqs[2].shard, 80);
  EXPECT_EQ(reqs[2].minute, kM - 1);
  states[3].claim_live = true;  // a live node is firing it: that firing sets the watermark
  EXPECT_EQ(WatermarkStarts(states, now, 2000, cfg).size(), 2u);
  // Shards that never fired get no catch-up request: there is no watermark to catch up from.
  EXPECT_TRUE(CatchUpRequests({states[1], states[2]}, now, 2000, cfg).empty());
}

}  // namespace
}  // namespace belfry

namespace belfry {
namespace {

TEST(DebtPlannerTest, AFiringBehindLeavesItsMissedMinutesAsDebtUnderFireAllAndCoalesceOnly) {
  const EpochMs now = SlotMs(kM, 10, 500) + 100;
  for (MisfirePolicy p : {MisfirePolicy::kFireAll, MisfirePolicy::kCoalesce, MisfirePolicy::kSkip}) {
    const auto plan = PlanFiring(kM - 61, kM, 10, now, Cfg(p));
    const MinuteRange debt = DebtToAdd(plan);
    if (p == MisfirePolicy::kSkip) {
      EXPECT_TRUE(debt.empty());
    } else {
      EXPECT_EQ(debt.first, kM - 14);  // too-old minutes are dropped when found, not owed
      EXPECT_EQ(debt.last, kM - 1);
    }
    EXPECT_EQ(plan.advance_to, kM);  // the watermark passes the gap either way
  }
}

TEST(DebtPlannerTest, FireAllTakesTheLowestChunkMinutesOneQueryEach) {
  SchedulerConfig cfg = Cfg(MisfirePolicy::kFireAll);
  DebtChunk c = PlanDebtChunk(MinuteRange{kM - 10, kM - 1}, cfg);
  EXPECT_EQ(c.fire.first, kM - 10);
  EXPECT_EQ(c.fire.last, kM - 10);
  EXPECT_FALSE(c.coalesced);
  EXPECT_EQ(c.settle.first, kM - 10);
  EXPECT_EQ(c.settle.last, kM - 10);
  cfg.catch_up_chunk_minutes = 4;
  c = PlanDebtChunk(MinuteRange{kM - 10, kM - 1}, cfg);
  EXPECT_EQ(c.fire.size(), 4);
  EXPECT_EQ(c.fire.last, kM - 7);
  c = PlanDebtChunk(MinuteRange{kM - 2, kM - 1}, cfg);  // a range shorter than the chunk
  EXPECT_EQ(c.fire.size(), 2);
  EXPECT_EQ(c.skipped, 0);
}

TEST(DebtPlannerTest, CoalesceTakesTheWholeRangeAndSkipSettlesWithoutFiring) {
  DebtChunk c = PlanDebtChunk(MinuteRange{kM - 10, kM - 1}, Cfg(MisfirePolicy::kCoalesce));
  EXPECT_TRUE(c.coalesced);
  EXPECT_EQ(c.fire.size(), 10);
  EXPECT_EQ(c.settle.size(), 10);
  // Debt left by a fire_all node, then the policy became skip: paid off unfired, counted.
  c = PlanDebtChunk(MinuteRange{kM - 10, kM - 1}, Cfg(MisfirePolicy::kSkip));
  EXPECT_TRUE(c.fire.empty());
  EXPECT_EQ(c.settle.size(), 10);
  EXPECT_EQ(c.skipped, 10);
}

TEST(DebtPlannerTest, DebtRequestsOldestFirstSkippingLiveDebtLeases) {
  SchedulerConfig cfg;
  std::vector<ShardState> states(4);
  for (int i = 0; i < 4; ++i) states[i].shard = i;
  states[0].debt_minutes = 3;
  states[0].debt_first = kM - 3;
  states[1].debt_minutes = 0;  // owes nothing
  states[2].debt_minutes = 10;
  states[2].debt_first = kM - 12;
  states[3].debt_minutes = 5;
  states[3].debt_first = kM - 20;
  states[3].debt_live = true;  // another node is firing it
  auto reqs = DebtRequests(states, cfg);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].shard, 2);
  EXPECT_TRUE(reqs[0].debt);
  EXPECT_FALSE(reqs[0].on_time);
  EXPECT_EQ(reqs[1].shard, 0);
  EXPECT_EQ(TotalDebtMinutes(states), 18);
  // Debt does not make a shard "behind": that is the watermark's business.
  states[0].fired_through = kM;
  EXPECT_TRUE(CatchUpRequests({states[0]}, SlotMs(kM, 0, 500) + 30'000, 2000, cfg).empty());
}

}  // namespace
}  // namespace belfry
