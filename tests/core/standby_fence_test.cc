#include "core/standby_fence.h"

#include <gtest/gtest.h>

namespace belfry {
namespace {

constexpr StandbyFenceRule kRule{50, 5};

TEST(StandbyFenceTest, ReadsOnceTheStandbyHasReplayedTheFence) {
  EXPECT_EQ(JudgeStandby(1000, 1000, 0, false, kRule), StandbyVerdict::kRead);
  EXPECT_EQ(JudgeStandby(1000, 5000, 0, false, kRule), StandbyVerdict::kRead);
  // Caught up ends a lagging spell at once.
  EXPECT_EQ(JudgeStandby(1000, 1000, 0, true, kRule), StandbyVerdict::kRead);
}

TEST(StandbyFenceTest, WaitsUpToTheBoundThenFallsBack) {
  EXPECT_EQ(JudgeStandby(1000, 999, 0, false, kRule), StandbyVerdict::kWait);
  EXPECT_EQ(JudgeStandby(1000, 999, 49, false, kRule), StandbyVerdict::kWait);
  EXPECT_EQ(JudgeStandby(1000, 999, 50, false, kRule), StandbyVerdict::kFallBack);
  EXPECT_EQ(JudgeStandby(1000, 0, 200, false, kRule), StandbyVerdict::kFallBack);
}

TEST(StandbyFenceTest, ALaggingStandbyGetsOnlyTheShortWait) {
  EXPECT_EQ(JudgeStandby(1000, 999, 0, true, kRule), StandbyVerdict::kWait);
  EXPECT_EQ(JudgeStandby(1000, 999, 4, true, kRule), StandbyVerdict::kWait);
  EXPECT_EQ(JudgeStandby(1000, 999, 5, true, kRule), StandbyVerdict::kFallBack);
}

TEST(StandbyFenceTest, ZeroWaitNeverWaits) {
  EXPECT_EQ(JudgeStandby(1000, 999, 0, false, StandbyFenceRule{0, 5}), StandbyVerdict::kFallBack);
  EXPECT_EQ(JudgeStandby(1000, 999, 0, true, StandbyFenceRule{0, 5}), StandbyVerdict::kFallBack);
  EXPECT_EQ(JudgeStandby(1000, 1000, 0, false, StandbyFenceRule{0, 5}), StandbyVerdict::kRead);
}

}  // namespace
}  // namespace belfry
