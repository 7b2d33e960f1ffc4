// Sweeper over a fake SweepStore and a FakeClock: when each sweep runs, with which cut-off, in
// how many batches, and what a failure or a stop does to the round.
#include "app/sweeper.h"

#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

#include "fakes/fake_clock.h"

namespace belfry {
namespace {

// 2026-11-22T13:37:00Z, a whole minute.
constexpr EpochMs kStart = 1'795'354'620'000;
constexpr int64_t kMinute = 60'000;

// Rows as their times: one-shots by run minute, published changes by epoch ms. A sweep deletes
// up to max_rows of those before its cut-off and records the call.
class FakeSweepStore final : public SweepStore {
 public:
  struct HistoryCall {
    int64_t retention_ms;
    int32_t days_ahead;
  };

  StatusOr<int64_t> SweepOneShots(int64_t before_minute, int32_t max_rows) override {
    one_shot_cutoffs.push_back(before_minute);
    if (on_one_shot_batch) on_one_shot_batch();
    if (fail_one_shots) return Status::Retryable("connection lost");
    return Delete(&one_shot_minutes, before_minute, max_rows);
  }

  StatusOr<int64_t> SweepJobChanges(EpochMs before_ms, int32_t max_rows) override {
    change_cutoffs.push_back(before_ms);
    if (fail_changes) return Status::Retryable("connection lost");
    return Delete(&change_times, before_ms, max_rows);
  }

  StatusOr<PartitionSweep> MaintainExecutionPartitions(int64_t retention_ms, int32_t days_ahead) override {
    history_calls.push_back({retention_ms, days_ahead});
    if (fail_history) return Status::Retryable("connection lost");
    return PartitionSweep{1, 0, 0};
  }

  std::vector<int64_t> one_shot_minutes;
  std::vector<EpochMs> change_times;
  bool fail_one_shots = false;
  bool fail_changes = false;
  bool fail_history = false;
  std::function<void()> on_one_shot_batch;

  std::vector<int64_t> one_shot_cutoffs;
  std::vector<EpochMs> change_cutoffs;
  std::vector<HistoryCall> history_calls;

 private:
  static int64_t Delete(std::vector<int64_t>* rows, int64_t before, int32_t max_rows) {
    int64_t deleted = 0;
    for (auto it = rows->begin(); it != rows->end() && deleted < max_rows;) {
      if (*it < before) {
        it = rows->erase(it);
        ++deleted;
      } else {
        ++it;
      }
    }
    return deleted;
  }
};

SweeperOptions SmallBatches() {
  SweeperOptions options;
  options.one_shot_retention_ms = 24 * 60 * kMinute;
  options.audit_retention_ms = 30LL * 24 * 60 * kMinute;
  options.history_retention_ms = 7LL * 24 * 60 * kMinute;
  options.history_every_ms = 5 * kMinute;
  options.batch_rows = 10;
  return options;
}

TEST(SweeperTest, SweepsTheHistoryInTheFirstRoundThenOncePerInterval) {
  FakeSweepStore store;
  FakeClock clock(kStart);
  StopSignal stop;
  Sweeper sweeper(store, clock, SmallBatches());

  EXPECT_TRUE(sweeper.RunOnce(stop).history_swept);
  ASSERT_EQ(store.history_calls.size(), 1u);
  EXPECT_EQ(store.history_calls[0].retention_ms, 7LL * 24 * 60 * kMinute);
  EXPECT_EQ(store.history_calls[0].days_ahead, 3);

  clock.Advance(5 * kMinute - 1);
  EXPECT_FALSE(sweeper.RunOnce(stop).history_swept);
  EXPECT_EQ(store.history_calls.size(), 1u) << "not due before executions.trim_interval has passed";
  clock.Advance(1);
  EXPECT_TRUE(sweeper.RunOnce(stop).history_swept);
  EXPECT_EQ(store.history_calls.size(), 2u);
}

TEST(SweeperTest, CutOffsAreTheRetentionsBeforeNow) {
  FakeSweepStore store;
  FakeClock clock(kStart + 59'999);  // late in the minute
  StopSignal stop;
  SweeperOptions options = SmallBatches();
  options.one_shot_retention_ms = 90 * kMinute + 30'000;  // counts in whole minutes: 90
  options.audit_retention_ms = 12'345;
  Sweeper sweeper(store, clock, options);

  sweeper.RunOnce(stop);
  ASSERT_EQ(store.one_shot_cutoffs.size(), 1u);
  EXPECT_EQ(store.one_shot_cutoffs[0], kStart / kMinute - 90);
  ASSERT_EQ(store.change_cutoffs.size(), 1u);
  EXPECT_EQ(store.change_cutoffs[0], kStart + 59'999 - 12'345);
}

TEST(SweeperTest, DeletesInBatchesUntilABatchDeletesFewer) {
  FakeSweepStore store;
  FakeClock clock(kStart);
  StopSignal stop;
  const int64_t expired_minute = kStart / kMinute - 24 * 60 - 1;
  for (int i = 0; i < 25; ++i) store.one_shot_minutes.push_back(expired_minute);
  store.one_shot_minutes.push_back(kStart / kMinute);  // still within the retention
  for (int i = 0; i < 20; ++i) store.change_times.push_back(kStart - 31LL * 24 * 60 * kMinute);
  store.change_times.push_back(kStart - kMinute);
  Sweeper sweeper(store, clock, SmallBatches());

  Sweeper::Round round = sweeper.RunOnce(stop);
  EXPECT_EQ(round.one_shots_deleted, 25);
  EXPECT_EQ(store.one_shot_cutoffs.size(), 3u) << "10, 10, then 5: fewer than a batch ends it";
  EXPECT_EQ(store.one_shot_minutes.size(), 1u);
  EXPECT_EQ(round.changes_deleted, 20);
  EXPECT_EQ(store.change_cutoffs.size(), 3u) << "10, 10, then 0";
  EXPECT_EQ(store.change_times.size(), 1u);
  EXPECT_EQ(round.failures, 0);
}

TEST(SweeperTest, AFailedSweepIsCountedAndTheRoundGoesOn) {
  FakeSweepStore store;
  FakeClock clock(kStart);
  StopSignal stop;
  store.fail_history = true;
  store.fail_one_shots = true;
  for (int i = 0; i < 3; ++i) store.change_times.push_back(kStart - 31LL * 24 * 60 * kMinute);
  Sweeper sweeper(store, clock, SmallBatches());

  Sweeper::Round round = sweeper.RunOnce(stop);
  EXPECT_EQ(round.failures, 2);
  EXPECT_FALSE(round.history_swept);
  EXPECT_EQ(store.one_shot_cutoffs.size(), 1u) << "a failed batch is not repeated in the round";
  EXPECT_EQ(round.changes_deleted, 3);

  // A failed history sweep waits for its next interval, like a successful one.
  store.fail_history = false;
  clock.Advance(kMinute);
  sweeper.RunOnce(stop);
  EXPECT_EQ(store.history_calls.size(), 1u);
  clock.Advance(4 * kMinute);
  EXPECT_TRUE(sweeper.RunOnce(stop).history_swept);
}

TEST(SweeperTest, AStopEndsEachSweepAfterItsCurrentBatch) {
  FakeSweepStore store;
  FakeClock clock(kStart);
  StopSignal stop;
  for (int i = 0; i < 25; ++i) store.one_shot_minutes.push_back(0);
  for (int i = 0; i < 25; ++i) store.change_times.push_back(0);
  store.on_one_shot_batch = [&stop] { stop.Request(); };
  Sweeper sweeper(store, clock, SmallBatches());

  Sweeper::Round round = sweeper.RunOnce(stop);
  EXPECT_EQ(round.one_shots_deleted, 10);
  EXPECT_EQ(round.changes_deleted, 10);
  EXPECT_EQ(store.one_shot_cutoffs.size(), 1u);
  EXPECT_EQ(store.change_cutoffs.size(), 1u);
}

TEST(SweeperTest, RunsARoundAtOnceThenOneAMinuteUntilStopped) {
  FakeSweepStore store;
  FakeClock clock(kStart);
  clock.StopAt(kStart + 10 * kMinute);
  StopSignal stop;
  Sweeper sweeper(store, clock, SmallBatches());

  sweeper.Run(stop);
  EXPECT_TRUE(stop.requested());
  // Rounds at minutes 0, 1, ..., 10: eleven; the history at minutes 0, 5 and 10.
  ASSERT_EQ(store.one_shot_cutoffs.size(), 11u);
  EXPECT_EQ(store.one_shot_cutoffs.front(), kStart / kMinute - 24 * 60);
  EXPECT_EQ(store.one_shot_cutoffs.back(), kStart / kMinute + 10 - 24 * 60);
  EXPECT_EQ(store.history_calls.size(), 3u);
}

}  // namespace
}  // namespace belfry
