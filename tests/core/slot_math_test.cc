#include "core/slot_math.h"

#include <gtest/gtest.h>

namespace belfry {
namespace {

constexpr EpochMs kDay = 24LL * 60 * 60 * 1000;
// 2026-11-22T13:37:00Z
constexpr EpochMs kT = 1795354620000LL;

TEST(SlotMathTest, EpochMinuteFloorsIncludingNegative) {
  EXPECT_EQ(EpochMinuteOf(0), 0);
  EXPECT_EQ(EpochMinuteOf(59'999), 0);
  EXPECT_EQ(EpochMinuteOf(60'000), 1);
  EXPECT_EQ(EpochMinuteOf(-1), -1);
  EXPECT_EQ(EpochMinuteOf(-60'000), -1);
  EXPECT_EQ(EpochMinuteOf(-60'001), -2);
  EXPECT_EQ(EpochMinuteOf(kT), kT / 60'000);
}

TEST(SlotMathTest, FirstMinuteAtOrAfterCeilsIncludingNegative) {
  EXPECT_EQ(FirstMinuteAtOrAfter(0), 0);
  EXPECT_EQ(FirstMinuteAtOrAfter(1), 1);
  EXPECT_EQ(FirstMinuteAtOrAfter(60'000), 1);
  EXPECT_EQ(FirstMinuteAtOrAfter(60'001), 2);
  EXPECT_EQ(FirstMinuteAtOrAfter(-1), 0);
  EXPECT_EQ(FirstMinuteAtOrAfter(-60'000), -1);
  EXPECT_EQ(FirstMinuteAtOrAfter(-60'001), -1);
  EXPECT_EQ(MinuteStartMs(-2), -120'000);
  EXPECT_EQ(PhaseKey(1440, 1439), 1440 * 1440 + 1439);
  EXPECT_EQ(PhaseKey(1, 0), 1440);
}

TEST(SlotMathTest, SlotIsMinutePlusShardTimesTick) {
  EXPECT_EQ(SlotMs(10, 0, 500), 600'000);
  EXPECT_EQ(SlotMs(10, 119, 500), 600'000 + 59'500);
  EXPECT_EQ(SlotMs(10, 59, 1000), 600'000 + 59'000);
}

TEST(SlotMathTest, FirstSlotAtOrAfterRoundsUpAcrossMinuteBoundary) {
  SlotRef r = FirstSlotAtOrAfter(kT, 500);
  EXPECT_EQ(r.minute, kT / 60'000);
  EXPECT_EQ(r.shard, 0);
  r = FirstSlotAtOrAfter(kT + 1, 500);
  EXPECT_EQ(r.shard, 1);
  r = FirstSlotAtOrAfter(kT + 59'501, 500);  // past shard 119's slot: next minute, shard 0
  EXPECT_EQ(r.minute, kT / 60'000 + 1);
  EXPECT_EQ(r.shard, 0);
  r = FirstSlotAtOrAfter(kT + 59'500, 500);
  EXPECT_EQ(r.minute, kT / 60'000);
  EXPECT_EQ(r.shard, 119);
}

TEST(SlotMathTest, LastSlotMinuteAtOrBefore) {
  const int64_t m = kT / 60'000;
  EXPECT_EQ(LastSlotMinuteAtOrBefore(kT + 500, 1, 500), m);
  EXPECT_EQ(LastSlotMinuteAtOrBefore(kT + 499, 1, 500), m - 1);
  EXPECT_EQ(LastSlotMinuteAtOrBefore(kT + 59'500, 119, 500), m);
}

TEST(SlotMathTest, DueRuleAcrossDayBoundary) {
  const int64_t midnight = (kT / kDay + 1) * kDay / 60'000;  // first minute of the next UTC day
  EXPECT_TRUE(IsDueInMinute(1440, 0, midnight));
  EXPECT_FALSE(IsDueInMinute(1440, 0, midnight - 1));
  EXPECT_TRUE(IsDueInMinute(1440, 1439, midnight - 1));
  EXPECT_TRUE(IsDueInMinute(60, 0, midnight));
  EXPECT_TRUE(IsDueInMinute(15, 0, midnight));
  // Every interval divides 1440, so midnight UTC is offset 0 for all of them.
  for (int i : {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440}) {
    EXPECT_TRUE(IsDueInMinute(i, 0, midnight)) << i;
  }
}

TEST(SlotMathTest, DueAtSlotHonoursStartEndPaused) {
  const int64_t m = 1000;
  const EpochMs slot = SlotMs(m, 3, 500);
  EXPECT_TRUE(IsDueAtSlot(5, 0, std::nullopt, std::nullopt, false, m, slot));
  EXPECT_FALSE(IsDueAtSlot(5, 0, std::nullopt, std::nullopt, true, m, slot));
  EXPECT_TRUE(IsDueAtSlot(5, 0, slot, std::nullopt, false, m, slot));        // start == slot
  EXPECT_FALSE(IsDueAtSlot(5, 0, slot + 1, std::nullopt, false, m, slot));   // start after slot
  EXPECT_FALSE(IsDueAtSlot(5, 0, std::nullopt, slot, false, m, slot));       // end == slot
  EXPECT_TRUE(IsDueAtSlot(5, 0, std::nullopt, slot + 1, false, m, slot));
  EXPECT_FALSE(IsDueAtSlot(5, 1, std::nullopt, std::nullopt, false, m, slot));
}

TEST(SlotMathTest, TermsForMinuteHasOneTermPerInterval) {
  const auto terms = TermsForMinute({1, 5, 60, 1440}, 1337);
  ASSERT_EQ(terms.size(), 4u);
  EXPECT_EQ(terms[0].offsets, std::vector<int32_t>{0});
  EXPECT_EQ(terms[1].offsets, std::vector<int32_t>{2});
  EXPECT_EQ(terms[2].offsets, std::vector<int32_t>{17});
  EXPECT_EQ(terms[3].offsets, std::vector<int32_t>{1337});
}

TEST(SlotMathTest, TermsForRangeCoversEachOffsetOnce) {
  const auto terms = TermsForRange({1, 5, 60}, 58, 64);  // 7 minutes
  EXPECT_EQ(terms[0].offsets, std::vector<int32_t>{0});
  EXPECT_EQ(terms[1].offsets.size(), 5u);
  EXPECT_EQ(terms[2].offsets, (std::vector<int32_t>{58, 59, 0, 1, 2, 3, 4}));
}

TEST(SlotMathTest, LatestDueMinute) {
  EXPECT_EQ(LatestDueMinute(5, 2, 100), 97);
  EXPECT_EQ(LatestDueMinute(5, 0, 100), 100);
  EXPECT_EQ(LatestDueMinute(1, 0, 100), 100);
  EXPECT_EQ(LatestDueMinute(60, 59, 100), 59);
}

TEST(SlotMathTest, NextTriggerTimesMatchesBruteForce) {
  for (int interval : {1, 2, 5, 60}) {
    for (int offset = 0; offset < interval; offset += (interval > 5 ? 13 : 1)) {
      for (EpochMs after : {kT - 1, kT, kT + 12'345}) {
        const auto got = NextTriggerTimes(interval, offset, 7, 500, std::nullopt, std::nullopt, after, 5);
        std::vector<EpochMs> want;
        for (int64_t m = EpochMinuteOf(after) - 1; want.size() < 5; ++m) {
          const EpochMs slot = SlotMs(m, 7, 500);
          if (slot > after && IsDueInMinute(interval, offset, m)) want.push_back(slot);
        }
        EXPECT_EQ(got, want) << interval << "/" << offset;
      }
    }
  }
}

TEST(SlotMathTest, NextTriggerTimesHonoursStartAndEnd) {
  const int64_t m = kT / 60'000;
  const EpochMs start = SlotMs(m + 10, 7, 500) + 1;  // just after minute m+10's slot
  const auto got = NextTriggerTimes(1, 0, 7, 500, start, SlotMs(m + 14, 7, 500), kT, 10);
  EXPECT_EQ(got, (std::vector<EpochMs>{SlotMs(m + 11, 7, 500), SlotMs(m + 12, 7, 500), SlotMs(m + 13, 7, 500)}));
}

}  // namespace
}  // namespace belfry
