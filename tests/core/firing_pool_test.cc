#include "core/firing_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "core/backoff.h"
#include "scheduler_sim.h"

namespace belfry {
namespace {

constexpr int64_t kM = 29922577;

// The pool runs real threads: wait (in real time, bounded) for what they do.
bool Eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

// Two jobs on two different shards, one worker.
class FiringPoolTest : public FiringFakes {
 protected:
  FiringPoolTest()
      : FiringFakes(SlotMs(kM, 0, 500)),
        firer_(cfg_, "node-a", store_, ledger_, sink_, policy_, clock_, observer_) {
    a_ = MakeJob("a", 1, 0);
    b_ = MakeJob("b", 1, 0);
    store_.Put(a_);
    store_.Put(b_);
    ledger_.SetFiredThrough(a_.shard, kM - 1);
    ledger_.SetFiredThrough(b_.shard, kM - 1);
    clock_.Set(SlotMs(kM, 119, 500));  // every slot of kM has come
  }

  std::unique_ptr<FiringPool> StartPool(int32_t in_flight) {
    cfg_.firings_in_flight = in_flight;
    return std::make_unique<FiringPool>(cfg_, std::vector<FiringPool::Worker>{{&firer_, &ledger_}}, clock_,
                                        /*backoff_seed=*/7);
  }

  ShardFirer firer_;
  JobSpec a_, b_;
};

TEST_F(FiringPoolTest, QueriesTheNextShardWhileTheFirstAwaitsItsAcks) {
  ASSERT_NE(a_.shard, b_.shard);
  sink_.HoldAcks();
  auto pool = StartPool(4);
  pool->DispatchOnTime(a_.shard, kM);
  pool->DispatchOnTime(b_.shard, kM);
  // One worker, and the acks of the first firing are held: the second is queued anyway.
  ASSERT_TRUE(Eventually([&] { return sink_.batches_created() == 2; }));
  EXPECT_EQ(ledger_.FiredThrough(a_.shard), kM - 1);  // nothing recorded before the acks
  EXPECT_EQ(ledger_.FiredThrough(b_.shard), kM - 1);
  sink_.ReleaseAcks();
  ASSERT_TRUE(Eventually(
      [&] { return ledger_.FiredThrough(a_.shard) == kM && ledger_.FiredThrough(b_.shard) == kM; }));
  pool->Drain();
  EXPECT_EQ(sink_.sent().size(), 2u);
}

TEST_F(FiringPoolTest, KeepsAtMostFiringsInFlightOpenPerWorker) {
  sink_.HoldAcks();
  auto pool = StartPool(1);
  pool->DispatchOnTime(a_.shard, kM);
  pool->DispatchOnTime(b_.shard, kM);
  ASSERT_TRUE(Eventually([&] { return sink_.batches_created() >= 1; }));
  // Quiet: the worker has nothing more it may do, b's request still queued behind the window.
  pool->Quiesce();
  EXPECT_EQ(sink_.batches_created(), 1);  // the window is full until the first is acked
  sink_.ReleaseAcks();
  ASSERT_TRUE(Eventually([&] { return ledger_.FiredThrough(b_.shard) == kM; }));
  EXPECT_EQ(ledger_.FiredThrough(a_.shard), kM);
  pool->Drain();
}

TEST_F(FiringPoolTest, ARequestForAShardInFlightIsFiredAfterItIsRecorded) {
  sink_.HoldAcks();
  auto pool = StartPool(4);
  pool->DispatchOnTime(a_.shard, kM);
  ASSERT_TRUE(Eventually([&] { return sink_.batches_created() == 1; }));
  clock_.Set(SlotMs(kM + 1, 119, 500));
  pool->DispatchOnTime(a_.shard, kM + 1);  // folded: the shard is busy until kM is recorded
  pool->Quiesce();                         // the worker has taken the request and put it aside
  EXPECT_EQ(sink_.batches_created(), 1);
  sink_.ReleaseAcks();
  ASSERT_TRUE(Eventually([&] { return ledger_.FiredThrough(a_.shard) == kM + 1; }));
  pool->Drain();
  size_t dups = 0;
  const auto keys = SentKeys(sink_, &dups);
  EXPECT_EQ(dups, 0u);
  EXPECT_EQ(keys.count({"a", SlotMs(kM, a_.shard, 500)}), 1u);
  EXPECT_EQ(keys.count({"a", SlotMs(kM + 1, a_.shard, 500)}), 1u);
}

TEST_F(FiringPoolTest, StopWaitsForTheAcksOfOpenFiringsAndRecordsThem) {
  sink_.HoldAcks();
  auto pool = StartPool(4);
  pool->DispatchOnTime(a_.shard, kM);
  ASSERT_TRUE(Eventually([&] { return sink_.batches_created() == 1; }));
  std::thread stopper([&] { pool->Stop(); });
  // Stop has reached the firing's acks (its batch is blocked in Finish), or wrongly recorded it.
  EXPECT_TRUE(Eventually([&] { return sink_.finishes_held() == 1 || ledger_.FiredThrough(a_.shard) != kM - 1; }));
  EXPECT_EQ(ledger_.FiredThrough(a_.shard), kM - 1);
  sink_.ReleaseAcks();
  stopper.join();
  EXPECT_EQ(ledger_.FiredThrough(a_.shard), kM);
  EXPECT_EQ(sink_.sent().size(), 1u);
}

TEST_F(FiringPoolTest, AFailedAckLeavesTheWatermarkForARetry) {
  sink_.HoldAcks();
  sink_.FailNextBatches(1);
  auto pool = StartPool(4);
  pool->DispatchOnTime(a_.shard, kM);
  pool->DispatchOnTime(b_.shard, kM);
  ASSERT_TRUE(Eventually([&] { return sink_.batches_created() == 2; }));
  sink_.ReleaseAcks();
  pool->Drain();
  EXPECT_EQ(ledger_.FiredThrough(a_.shard), kM - 1);  // its batch failed
  EXPECT_EQ(ledger_.FiredThrough(b_.shard), kM);
  EXPECT_EQ(observer_.failures, 1);
}

TEST_F(FiringPoolTest, AFailedShardWaitsItsJitteredBackoffBeforeAScanRetriesIt) {
  // StartPool seeds the pool with 7, and the pool seeds shard s's back-off with 7 + s: its first
  // wait is drawn from [125, 250] ms instead of being the same 250 ms on every node.
  const int64_t wait = Backoff(BackoffPolicy{250, 5000}, 7 + static_cast<uint64_t>(a_.shard)).NextDelayMs();
  ASSERT_GE(wait, 125);
  ASSERT_LT(wait, 250) << "this seed does not show the jitter; pick another";
  sink_.FailNextBatches(1);
  auto pool = StartPool(4);
  const EpochMs failed_at = clock_.NowMs();
  pool->DispatchOnTime(a_.shard, kM);
  pool->Drain();
  ASSERT_EQ(ledger_.FiredThrough(a_.shard), kM - 1);
  ASSERT_EQ(observer_.failures, 1);

  clock_.Set(failed_at + wait - 1);
  pool->DispatchCatchUpScan();
  pool->Drain();
  EXPECT_EQ(ledger_.FiredThrough(a_.shard), kM - 1) << "retried before its back-off ended";

  clock_.Set(failed_at + wait);
  pool->DispatchCatchUpScan();
  pool->Drain();
  EXPECT_EQ(ledger_.FiredThrough(a_.shard), kM) << "not retried once its back-off ended";
}


// A shard whose debt firings keep failing waits longer after each one: 1 s, doubling to 5 s
// (jittered), so a poisoned debt no longer re-fires every second without end.
TEST_F(FiringPoolTest, AFailingDebtFiringBacksOffLongerEachTime) {
  // Every shard fired through kM, and the waits below stay within minute kM: the only firings
  // (and so the only batches) are the debt firings of a's shard.
  for (int32_t s = 0; s < 120; ++s) ledger_.SetFiredThrough(s, kM);
  ledger_.AddDebt(a_.shard, MinuteRange{kM - 1, kM - 1});
  clock_.Set(SlotMs(kM, 0, 500));
  Backoff expected(BackoffPolicy{1000, 5000}, (7 ^ 0x9e3779b97f4a7c15ULL) + static_cast<uint64_t>(a_.shard));
  sink_.FailNextBatches(1000);
  auto pool = StartPool(4);
  int64_t batches = 0;
  std::vector<int64_t> waits;
  for (int failure = 1; failure <= 5; ++failure) {
    pool->DispatchCatchUpScan();
    pool->Drain();
    ASSERT_EQ(sink_.batches_created(), ++batches) << "debt firing " << failure << " did not run";
    const EpochMs failed_at = clock_.NowMs();
    const int64_t wait = expected.NextDelayMs();
    waits.push_back(wait);
    clock_.Set(failed_at + wait - 1);
    pool->DispatchCatchUpScan();
    pool->Drain();
    ASSERT_EQ(sink_.batches_created(), batches) << "debt retried before back-off " << failure << " ended";
    clock_.Set(failed_at + wait);
  }
  EXPECT_GE(waits[0], 500);
  EXPECT_LE(waits[0], 1000);
  EXPECT_GT(waits[2], 2000) << "the third failure's ceiling is 4 s";
  EXPECT_GE(waits[4], 2500);
  EXPECT_LE(waits[4], 5000);
  EXPECT_EQ(ledger_.Debt(a_.shard).size(), 1u) << "a failed debt firing keeps its debt";
}

}  // namespace
}  // namespace belfry
