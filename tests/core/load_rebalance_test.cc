#include "core/load_rebalance.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <utility>

namespace belfry {
namespace {

// The daily load the loads and the plan's moves leave: what an operator gets by applying it.
std::vector<int64_t> Apply(const std::vector<OffsetLoad>& loads, const std::vector<OffsetMove>& moves) {
  std::vector<int64_t> day(kMinutesPerDay, 0);
  for (const OffsetLoad& l : loads) {
    for (int32_t d = l.offset_minutes; d < kMinutesPerDay; d += l.interval_minutes)
      day[static_cast<size_t>(d)] += l.pinned + l.movable;
  }
  for (const OffsetMove& m : moves) {
    for (int32_t d = m.from_offset; d < kMinutesPerDay; d += m.interval_minutes) day[static_cast<size_t>(d)] -= m.jobs;
    for (int32_t d = m.to_offset; d < kMinutesPerDay; d += m.interval_minutes) day[static_cast<size_t>(d)] += m.jobs;
  }
  return day;
}

// A million daily jobs at 09:00 that took their minute from the command's timestamp, beside
// 100,000 whose owners pinned 09:00 and 10,000 every-minute jobs: the movable ones spread over
// the day, the pinned ones stay, and 09:00 is left with exactly what was pinned there.
TEST(LoadRebalanceTest, SpreadsAThunderingHerdButNeverMovesAPinnedJob) {
  const std::vector<OffsetLoad> loads = {{1440, 540, 100'000, 1'000'000}, {1, 0, 10'000, 0}};
  const RebalancePlan plan = PlanRebalance(loads);
  EXPECT_EQ(plan.peak_before, 1'110'000);
  EXPECT_EQ(plan.peak_minute_before, 540);
  EXPECT_EQ(plan.jobs_moved, 1'000'000);
  EXPECT_EQ(plan.peak_after, 110'000);
  EXPECT_EQ(plan.peak_minute_after, 540);
  for (const OffsetMove& m : plan.moves) {
    EXPECT_EQ(m.interval_minutes, 1440);
    EXPECT_EQ(m.from_offset, 540);
    EXPECT_NE(m.to_offset, 540);
  }
  EXPECT_EQ(Apply(loads, plan.moves), plan.after);
  // Spread: no other minute of the day carries more than a fair share of the herd, plus the
  // every-minute jobs.
  int64_t busiest_other = 0;
  for (int32_t d = 0; d < kMinutesPerDay; ++d) {
    if (d != 540) busiest_other = std::max(busiest_other, plan.after[static_cast<size_t>(d)]);
  }
  EXPECT_LE(busiest_other, 10'000 + 1'000'000 / 1439 + 2);

  const nlohmann::json j = nlohmann::json::parse(EncodeRebalancePlanJson(plan));
  EXPECT_EQ(j["dryRun"], true);
  EXPECT_EQ(j["peakBefore"]["minuteOfDay"], "09:00");
  EXPECT_EQ(j["peakBefore"]["triggers"], 1'110'000);
  EXPECT_EQ(j["peakAfter"]["triggers"], 110'000);
  EXPECT_EQ(j["jobsMoved"], 1'000'000);
  EXPECT_EQ(j["pinned"], 110'000);
  EXPECT_EQ(j["movable"], 1'000'000);
  EXPECT_EQ(j["moves"].size(), plan.moves.size());
}

TEST(LoadRebalanceTest, WithNothingMovableItProposesNothing) {
  const std::vector<OffsetLoad> loads = {{1440, 540, 5'000, 0}, {60, 0, 300, 0}, {5, 2, 0, 0}};
  const RebalancePlan plan = PlanRebalance(loads);
  EXPECT_TRUE(plan.moves.empty());
  EXPECT_EQ(plan.peak_before, plan.peak_after);
  EXPECT_EQ(plan.before, plan.after);
  EXPECT_EQ(plan.peak_before, 5'300);
}

// Random mixes: the jobs are conserved, the peak never rises, a job moves only within its
// interval and only if it was movable, and the moves reproduce the projected day.
TEST(LoadRebalanceTest, RandomMixesKeepTheInvariants) {
  const std::vector<int32_t> intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
  std::mt19937_64 rng(18);
  for (int round = 0; round < 30; ++round) {
    std::map<std::pair<int32_t, int32_t>, OffsetLoad> by_key;
    for (int i = 0; i < 200; ++i) {
      const int32_t interval = intervals[rng() % intervals.size()];
      const int32_t offset = static_cast<int32_t>(rng() % static_cast<uint64_t>(interval));
      OffsetLoad& l = by_key[{interval, offset}];
      l.interval_minutes = interval;
      l.offset_minutes = offset;
      (rng() % 3 == 0 ? l.pinned : l.movable) += static_cast<int64_t>(rng() % 5000);
    }
    if (round % 5 == 0) by_key[{1440, 540}].movable += 200'000;  // sometimes a herd
    by_key[{1440, 540}].interval_minutes = 1440;
    by_key[{1440, 540}].offset_minutes = 540;
    std::vector<OffsetLoad> loads;
    for (auto& [k, l] : by_key) loads.push_back(l);
    const RebalancePlan plan = PlanRebalance(loads);
    int64_t before = 0, after = 0;
    for (int32_t d = 0; d < kMinutesPerDay; ++d) {
      before += plan.before[static_cast<size_t>(d)];
      after += plan.after[static_cast<size_t>(d)];
    }
    EXPECT_EQ(before, after);
    EXPECT_LE(plan.peak_after, plan.peak_before);
    EXPECT_EQ(Apply(loads, plan.moves), plan.after) << "round " << round;
    std::map<std::pair<int32_t, int32_t>, int64_t> out;
    for (const OffsetMove& m : plan.moves) {
      EXPECT_NE(m.interval_minutes, 1);
      EXPECT_NE(m.from_offset, m.to_offset);
      EXPECT_LT(m.to_offset, m.interval_minutes);
      out[{m.interval_minutes, m.from_offset}] += m.jobs;
    }
    for (const auto& [key, n] : out) EXPECT_LE(n, by_key[key].movable) << "moved pinned jobs";
    if (round % 5 == 0) {
      EXPECT_LT(plan.peak_after, plan.peak_before / 2) << "the herd stayed";
    }
  }
}

}  // namespace
}  // namespace belfry
