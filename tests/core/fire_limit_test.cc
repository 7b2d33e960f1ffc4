// Limited runs (maxFires, docs/fire-limits.md) on plain values, against a brute-force oracle that
// walks the minutes one by one with the tick query's own due rule.
#include "core/fire_limit.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "core/calendar_schedule.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "interval_job_oracle.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int64_t kTick = 500;
constexpr int64_t kMinute = 29'931'187;  // 2026-11-28T13:07Z
constexpr EpochMs kNow = kMinute * 60'000 + 12'345;

// Every slot the tick query would fire for `spec` (start_at and end_at as the tick reads them) at
// or after `from_ms`, over `minutes` minutes from its minute (interval_job_oracle.h).
std::vector<EpochMs> OracleFires(const JobSpec& spec, EpochMs from_ms, int64_t minutes) {
  std::vector<EpochMs> out;
  for (EpochMs slot : BruteForceSlots(spec, EpochMinuteOf(from_ms), EpochMinuteOf(from_ms) + minutes, kTick)) {
    if (slot >= from_ms) out.push_back(slot);
  }
  return out;
}

TEST(FireLimitTest, AnIntervalJobFiresExactlyMaxFiresTimesFromItsCommand) {
  for (const int32_t interval : {1, 5, 7, 60}) {
    for (const int32_t shard : {0, 37, 119}) {
      for (const int32_t max_fires : {1, 2, 3, 10}) {
        JobSpec s = IntervalJob(interval, 3 % interval, shard);
        const JobSpec unlimited = s;
        s.max_fires = max_fires;
        s.fires_from_ms = kNow;
        ApplyFireLimit(SystemTimeZones(), &s, kTick);
        ASSERT_TRUE(s.end_at.has_value());
        const std::vector<EpochMs> all = OracleFires(unlimited, kNow, (max_fires + 2) * interval + 2);
        const std::vector<EpochMs> limited = OracleFires(s, kNow, (max_fires + 2) * interval + 2);
        ASSERT_EQ(limited.size(), static_cast<size_t>(max_fires)) << interval << " " << shard << " " << max_fires;
        EXPECT_TRUE(std::equal(limited.begin(), limited.end(), all.begin())) << "the first slots, none skipped";
        // The end is a minute boundary right after the last fire: readable, and within the next minute.
        EXPECT_EQ(*s.end_at % 60'000, 0);
        EXPECT_EQ(EpochMinuteOf(*s.end_at), EpochMinuteOf(limited.back()) + 1);
      }
    }
  }
}

TEST(FireLimitTest, TheEarlierEndWinsAndStartDelaysTheCount) {
  JobSpec s = IntervalJob(5, 0, 10);
  s.max_fires = 4;
  s.fires_from_ms = kNow;
  s.requested_end_at = kNow + 8 * 60'000;  // holds two slots only
  ApplyFireLimit(SystemTimeZones(), &s, kTick);
  EXPECT_EQ(s.end_at, s.requested_end_at);
  EXPECT_EQ(OracleFires(s, kNow, 60).size(), 2u);

  s.requested_end_at.reset();
  s.start_at = kNow + 3 * 3'600'000;  // counting starts with the first slot at or after the start
  ApplyFireLimit(SystemTimeZones(), &s, kTick);
  const std::vector<EpochMs> fires = OracleFires(s, kNow, 6 * 60);
  ASSERT_EQ(fires.size(), 4u);
  EXPECT_GE(fires.front(), *s.start_at);
}

TEST(FireLimitTest, RemainingCountsTheSlotsUpToNow) {
  JobSpec s = IntervalJob(1, 0, 20);  // the shard's slot is at second 10 of each minute
  s.max_fires = 3;
  s.fires_from_ms = kMinute * 60'000;
  ApplyFireLimit(SystemTimeZones(), &s, kTick);
  const EpochMs first = SlotMs(kMinute, 20, kTick);
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, false, std::nullopt, kTick, first - 1), 3);
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, false, std::nullopt, kTick, first), 2)
      << "a slot at now counts as fired";
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, false, std::nullopt, kTick, first + 60'000), 1);
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, false, std::nullopt, kTick, first + 10 * 60'000), 0);
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, true, first + 30'000, kTick, first + 10 * 60'000), 2)
      << "paused after one fire";
  EXPECT_FALSE(FiresRemaining(SystemTimeZones(), IntervalJob(1, 0, 20), false, std::nullopt, kTick, first)
                   .has_value());
}

TEST(FireLimitTest, APauseStopsTheCountAndAResumeFiresTheRest) {
  JobSpec s = IntervalJob(1, 0, 0);
  s.max_fires = 5;
  s.fires_from_ms = kMinute * 60'000;
  ApplyFireLimit(SystemTimeZones(), &s, kTick);
  // Two fires (minutes 0 and 1), a pause in minute 1, a resume an hour later.
  const EpochMs paused_at = (kMinute + 1) * 60'000 + 30'000;
  const EpochMs resume_at = (kMinute + 61) * 60'000 + 30'000;
  ResumeFireLimit(SystemTimeZones(), &s, paused_at, resume_at, kTick);
  EXPECT_EQ(s.fires_before, 2);
  EXPECT_EQ(s.fires_from_ms, resume_at);
  const std::vector<EpochMs> after = OracleFires(s, resume_at, 30);
  ASSERT_EQ(after.size(), 3u) << "the three fires left";
  EXPECT_EQ(after.front(), SlotMs(kMinute + 62, 0, kTick));
  EXPECT_TRUE(OracleFires(s, kMinute * 60'000, 61).empty()) << "no slot of the paused hour fires, not even in a catch-up";
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, false, std::nullopt, kTick, resume_at), 3);

  // A resume applied before the pause took effect counts from the pause, never twice.
  JobSpec t = IntervalJob(1, 0, 0);
  t.max_fires = 5;
  t.fires_from_ms = kMinute * 60'000;
  ApplyFireLimit(SystemTimeZones(), &t, kTick);
  ResumeFireLimit(SystemTimeZones(), &t, paused_at, paused_at - 45'000, kTick);
  EXPECT_EQ(t.fires_before, 2);
  EXPECT_EQ(t.fires_from_ms, paused_at);
  EXPECT_EQ(t.start_at, paused_at) << "the new window opens at the pause";
  EXPECT_EQ(OracleFires(t, kMinute * 60'000, 30).size(), 3u) << "the 3 left after the 2 before the pause";
}

// During a reshard's move a job stored in new shard 130 still fires with old shard 10 (second 5,
// 500 ms tick). A resume counts by that basis: by shard 130 at the old tick its slot would be
// 65 s into each minute, and the window would end a minute late, one fire too many.
TEST(FireLimitTest, AResumeDuringAReshardCountsByTheJobsFiringShard) {
  const ShardLayout moving{120, 240, ShardLayout::Phase::kMoving, 40, 0};
  JobSpec s = IntervalJob(1, 0, 130);
  s.max_fires = 3;
  s.fires_from_ms = kMinute * 60'000 + 3'000;
  const EpochMs paused_at = kMinute * 60'000 + 30'000;  // one fire (second 5 of kMinute) before it
  const EpochMs resume_at = (kMinute + 61) * 60'000 + 4'000;
  const FiringBasis b = FiringBasisOf(moving, EpochMinuteOf(resume_at), s.shard);
  EXPECT_EQ(b.shard, 10);
  EXPECT_EQ(b.tick_ms, 500);
  s.shard = b.shard;
  ResumeFireLimit(SystemTimeZones(), &s, paused_at, resume_at, b.tick_ms);
  EXPECT_EQ(s.fires_before, 1);
  EXPECT_EQ(s.end_at, (kMinute + 63) * 60'000) << "the two fires left: seconds 5 of minutes +61 and +62";
  EXPECT_EQ(OracleFires(s, resume_at, 10).size(), 2u);
}

TEST(FireLimitTest, AJobThatUsedEveryFireStaysStopped) {
  JobSpec s = IntervalJob(1, 0, 0);
  s.max_fires = 2;
  s.fires_from_ms = kMinute * 60'000;
  ApplyFireLimit(SystemTimeZones(), &s, kTick);
  ResumeFireLimit(SystemTimeZones(), &s, (kMinute + 10) * 60'000, (kMinute + 20) * 60'000, kTick);
  EXPECT_EQ(s.fires_before, 2);
  EXPECT_TRUE(OracleFires(s, (kMinute + 20) * 60'000, 60).empty());
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, false, std::nullopt, kTick, (kMinute + 30) * 60'000), 0);
}

TEST(FireLimitTest, ACalendarJobCountsItsCronSlots) {
  JobSpec s;
  s.id = "berlin-weekdays";
  s.shard = 42;
  const std::vector<int32_t> intervals = {1, 5, 15, 60, 1440};
  ASSERT_TRUE(
      PlanCalendarJob(SystemTimeZones(), "0 9 * * MON-FRI", "Europe/Berlin", kNow, intervals, &s).ok());
  const JobSpec unlimited = s;
  s.max_fires = 7;
  s.fires_from_ms = kNow;
  ApplyFireLimit(SystemTimeZones(), &s, kTick);
  const std::vector<EpochMs> all = NextJobTriggerTimes(SystemTimeZones(), unlimited, kTick, kNow - 1, 20);
  const std::vector<EpochMs> limited = NextJobTriggerTimes(SystemTimeZones(), s, kTick, kNow - 1, 20);
  ASSERT_EQ(limited.size(), 7u);
  EXPECT_TRUE(std::equal(limited.begin(), limited.end(), all.begin()));
  EXPECT_EQ(CountJobSlots(SystemTimeZones(), unlimited, kTick, kNow, all[9], 100), 9);
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), s, false, std::nullopt, kTick, all[2]), 4);
}

TEST(FireLimitTest, OneShotsHaveNoSlotsToCount) {
  JobSpec s;
  s.run_at = kNow;
  s.run_minute = kMinute + 1;
  EXPECT_EQ(CountJobSlots(SystemTimeZones(), s, kTick, kNow - 3'600'000, kNow + 3'600'000, 10), 0);
}

}  // namespace
}  // namespace belfry
