// Hermetic tests of verify --churn-rate's judging rule (schedule_history.h) and of the /metrics
// histogram quantile the per-window report uses (metrics_scrape.h).
#include "loadtest/schedule_history.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/slot_math.h"
#include "loadtest/metrics_scrape.h"

namespace belfry::loadtest {
namespace {

constexpr int64_t kMargin = 2000;
constexpr int32_t kShard = 10;
constexpr int64_t kTick = 500;
constexpr int64_t kMinute = 29'000'000;  // an epoch minute; a multiple of 60 (interval 60 offset 0)

EpochMs Slot(int64_t minute) { return SlotMs(minute, kShard, kTick); }

IntervalSchedule Every(int32_t interval, int32_t offset, bool paused = false) {
  return IntervalSchedule{true, paused, interval, offset};
}

// A job loaded with `before`, changed by one command sent at `sent` and applied at `applied`.
std::vector<ScheduleVersion> OneChange(IntervalSchedule before, IntervalSchedule after, EpochMs sent,
                                       EpochMs applied) {
  return {ScheduleVersion{before, kBeforeWindowMs, kBeforeWindowMs}, ScheduleVersion{after, sent, applied}};
}

SlotExpectation At(const std::vector<ScheduleVersion>& h, int64_t minute,
                   EpochMs received = kNotAppliedYetMs) {
  return ExpectSlot(h, minute, Slot(minute), kMargin, received);
}

TEST(ApplyChurnOpTest, UpsertKeepsPausedFlagOfExistingJobOnly) {
  EXPECT_EQ(ApplyChurnOp(IntervalSchedule{}, ChurnOp::kCreate, 5, 3), Every(5, 3));
  EXPECT_EQ(ApplyChurnOp(Every(5, 3), ChurnOp::kUpdateOffset, 5, 4), Every(5, 4));
  EXPECT_EQ(ApplyChurnOp(Every(5, 3, true), ChurnOp::kUpdateInterval, 10, 7), Every(10, 7, true));
  EXPECT_EQ(ApplyChurnOp(Every(5, 3), ChurnOp::kPause, 0, 0), Every(5, 3, true));
  EXPECT_EQ(ApplyChurnOp(Every(5, 3, true), ChurnOp::kResume, 0, 0), Every(5, 3));
  EXPECT_EQ(ApplyChurnOp(Every(5, 3), ChurnOp::kDelete, 0, 0), IntervalSchedule{});
  // pause/resume of a missing job change nothing (belfry: a no-op with outcome applied).
  EXPECT_EQ(ApplyChurnOp(IntervalSchedule{}, ChurnOp::kPause, 0, 0), IntervalSchedule{});
  EXPECT_EQ(ApplyChurnOp(IntervalSchedule{}, ChurnOp::kResume, 0, 0), IntervalSchedule{});
  // Deleting and re-creating resets the paused flag.
  EXPECT_EQ(ApplyChurnOp(ApplyChurnOp(Every(5, 3, true), ChurnOp::kDelete, 0, 0), ChurnOp::kCreate, 5, 3),
            Every(5, 3));
}

TEST(ExpectSlotTest, UnchangedJobFollowsItsSchedule) {
  const std::vector<ScheduleVersion> h = {ScheduleVersion{Every(2, 0), kBeforeWindowMs, kBeforeWindowMs}};
  EXPECT_EQ(At(h, kMinute), SlotExpectation::kRequired);
  EXPECT_EQ(At(h, kMinute + 1), SlotExpectation::kForbidden);
}

// Offset 0 -> 1 on a 2-minute job: minute M (even) is due only before, M+1 only after.
TEST(ExpectSlotTest, OffsetMoveMarginEdges) {
  const int64_t m = kMinute;
  // Sent and applied well after slot M + margin: M is old-only (required), M+1 is old-not-due
  // and the change is after its slot too: forbidden.
  const EpochMs late_sent = Slot(m + 1) + kMargin + 1;
  auto h = OneChange(Every(2, 0), Every(2, 1), late_sent, late_sent + 100);
  EXPECT_EQ(At(h, m), SlotExpectation::kRequired);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kForbidden);
  // The slot is exactly sent - margin: uncertain, so M+1 may fire (new) and need not.
  h = OneChange(Every(2, 0), Every(2, 1), Slot(m + 1) + kMargin, Slot(m + 1) + kMargin + 100);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kAllowed);
  // Applied at slot - margin - 1: the new schedule for sure.
  h = OneChange(Every(2, 0), Every(2, 1), Slot(m + 1) - kMargin - 500, Slot(m + 1) - kMargin - 1);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kRequired);
  EXPECT_EQ(At(h, m + 2), SlotExpectation::kForbidden);
  EXPECT_EQ(At(h, m + 3), SlotExpectation::kRequired);
  // Applied exactly at slot - margin: still uncertain.
  h = OneChange(Every(2, 0), Every(2, 1), Slot(m + 1) - kMargin - 500, Slot(m + 1) - kMargin);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kAllowed);
  // Outcome never read: uncertain from sent - margin on, for good.
  h = OneChange(Every(2, 0), Every(2, 1), Slot(m) - 100, kNotAppliedYetMs);
  EXPECT_EQ(At(h, m), SlotExpectation::kAllowed);
  EXPECT_EQ(At(h, m + 5), SlotExpectation::kAllowed);
  EXPECT_EQ(At(h, m - 2), SlotExpectation::kRequired);  // long before it was sent
}

TEST(ExpectSlotTest, SameSlotUnderBothSchedulesIsRequired) {
  // 1-minute job -> 2-minute job with offset 0: minute M (even) is due under both.
  const auto h = OneChange(Every(1, 0), Every(2, 0), Slot(kMinute), Slot(kMinute) + 50);
  EXPECT_EQ(At(h, kMinute), SlotExpectation::kRequired);
  EXPECT_EQ(At(h, kMinute + 1), SlotExpectation::kForbidden);  // old only, applied long before
  EXPECT_EQ(At(h, kMinute + 2), SlotExpectation::kRequired);
}

TEST(ExpectSlotTest, CreatePauseResumeDelete) {
  const int64_t m = kMinute;
  const EpochMs t = Slot(m);
  // Create: absent before, due after.
  auto h = OneChange(IntervalSchedule{}, Every(1, 0), t + 10'000, t + 10'200);
  EXPECT_EQ(At(h, m), SlotExpectation::kForbidden);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kRequired);
  h = OneChange(IntervalSchedule{}, Every(1, 0), t - 1000, t + 300);  // created around the slot
  EXPECT_EQ(At(h, m), SlotExpectation::kAllowed);
  // Pause: no triggers after the margin.
  h = OneChange(Every(1, 0), Every(1, 0, true), t - 1000, t + 300);
  EXPECT_EQ(At(h, m - 1), SlotExpectation::kRequired);
  EXPECT_EQ(At(h, m), SlotExpectation::kAllowed);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kForbidden);
  // Resume: triggers again.
  h = OneChange(Every(1, 0, true), Every(1, 0), t - 1000, t + 300);
  EXPECT_EQ(At(h, m - 1), SlotExpectation::kForbidden);
  EXPECT_EQ(At(h, m), SlotExpectation::kAllowed);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kRequired);
  // Delete.
  h = OneChange(Every(1, 0), IntervalSchedule{}, t - 1000, t + 300);
  EXPECT_EQ(At(h, m), SlotExpectation::kAllowed);
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kForbidden);
}

TEST(ExpectSlotTest, ArrivalIgnoresCommandsSentAfterIt) {
  // Pause sent 1 s after the slot, i.e. within the margin, but after the trigger arrived: the
  // query cannot have seen it, so the arrival is judged by the old schedule alone.
  const EpochMs t = Slot(kMinute);
  const auto h = OneChange(Every(1, 0), Every(1, 0, true), t + 1000, t + 1200);
  EXPECT_EQ(At(h, kMinute), SlotExpectation::kAllowed);           // nothing arrived: may be absent
  EXPECT_EQ(At(h, kMinute, t + 40), SlotExpectation::kRequired);  // arrived before the pause was sent
  // Create sent after the arrival: the arrival is forbidden.
  const auto created = OneChange(IntervalSchedule{}, Every(1, 0), t + 1000, t + 1200);
  EXPECT_EQ(At(created, kMinute, t + 40), SlotExpectation::kForbidden);
  EXPECT_EQ(At(created, kMinute, t + 1001), SlotExpectation::kAllowed);
}

TEST(ExpectSlotTest, SeveralChangesInARow) {
  const int64_t m = kMinute;
  const EpochMs t = Slot(m);
  // Loaded every minute; paused long before M; resumed just around M; deleted long after.
  const std::vector<ScheduleVersion> h = {
      ScheduleVersion{Every(1, 0), kBeforeWindowMs, kBeforeWindowMs},
      ScheduleVersion{Every(1, 0, true), t - 120'000, t - 119'900},
      ScheduleVersion{Every(1, 0), t - 500, t + 500},
      ScheduleVersion{IntervalSchedule{}, t + 180'000, t + 180'100},
  };
  EXPECT_EQ(At(h, m - 3), SlotExpectation::kRequired);   // before the pause
  EXPECT_EQ(At(h, m - 1), SlotExpectation::kForbidden);  // paused for sure
  EXPECT_EQ(At(h, m), SlotExpectation::kAllowed);        // the resume is uncertain
  EXPECT_EQ(At(h, m + 1), SlotExpectation::kRequired);   // resumed
  EXPECT_EQ(At(h, m + 3), SlotExpectation::kAllowed);    // the delete is uncertain
  EXPECT_EQ(At(h, m + 4), SlotExpectation::kForbidden);  // deleted
}

TEST(QuantileBetweenTest, InterpolatesWithinTheBucketOfTheDelta) {
  const double inf = std::numeric_limits<double>::infinity();
  const CumulativeBuckets before = {{0.001, 10}, {0.01, 20}, {0.1, 20}, {inf, 20}};
  // 100 new observations: 50 in (0, 1 ms], 49 in (1, 10 ms], 1 in (10, 100 ms].
  const CumulativeBuckets after = {{0.001, 60}, {0.01, 119}, {0.1, 120}, {inf, 120}};
  EXPECT_NEAR(QuantileBetween(before, after, 0.5), 0.001, 1e-12);
  EXPECT_NEAR(QuantileBetween(before, after, 0.99), 0.01, 1e-12);
  EXPECT_NEAR(QuantileBetween(before, after, 0.995), 0.01 + 0.09 * 0.5, 1e-12);
  EXPECT_EQ(QuantileBetween(after, after, 0.5), -1);  // nothing observed in between
  const std::string text =
      "# TYPE belfry_tick_query_seconds histogram\n"
      "belfry_tick_query_seconds_bucket{le=\"0.001\"} 60\n"
      "belfry_tick_query_seconds_bucket{le=\"0.01\"} 119\n"
      "belfry_tick_query_seconds_bucket{le=\"0.1\"} 120\n"
      "belfry_tick_query_seconds_bucket{le=\"+Inf\"} 120\n"
      "belfry_tick_query_seconds_sum 0.5\n";
  EXPECT_EQ(ParseHistogramBuckets(text, "belfry_tick_query_seconds"), after);
  EXPECT_EQ(SumMetricSamples(text, "belfry_tick_query_seconds_bucket", "le=\"0.01\""), 119);
}

}  // namespace
}  // namespace belfry::loadtest
