// Issue 17: after an outage, on-time shard-minutes go ahead of the catch-up, in the database and
// in the producer. The real FiringPool and ShardFirer run over a FakeClock that the test steps;
// each producer is a FakeTriggerSink that acknowledges at a fixed rate in FakeClock time (one
// FIFO queue, as a producer in front of a busy broker), so a trigger's lateness is its ack time
// minus its slot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "core/firing_pool.h"
#include "scheduler_sim.h"

namespace belfry {
namespace {

constexpr int64_t kM = 29922577;
constexpr int kJobsPerShard = 20;
constexpr int64_t kAcksPerSecond = 400;  // per producer: one shard-minute takes 50 ms
constexpr int64_t kStepMs = 50;

class CatchUpOrderingTest : public ::testing::Test {
 protected:
  CatchUpOrderingTest()
      : clock_(SlotMs(kM, 0, 500)),
        ledger_(120, clock_),
        policy_({"*"}, {}),
        firer_a_(cfg_, "node-a", store_, ledger_, on_time_sink_, catch_up_sink_, nullptr, policy_, clock_,
                 observer_),
        firer_b_(cfg_, "node-a", store_, ledger_, on_time_sink_, catch_up_sink_, nullptr, policy_, clock_,
                 observer_) {
    cfg_.workers = 2;
    cfg_.firings_in_flight = 2;
    // Slots more than 5 s old at the restart are missed; so the restart's own on-time work is small
    // and the test measures the catch-up, not the threshold.
    cfg_.misfire_threshold_ms = 5000;
    std::map<int32_t, int> per_shard;
    for (int n = 0, full = 0; full < 120; ++n) {
      JobSpec j = MakeJob("job-" + std::to_string(n), 1, 0);
      int& count = per_shard[j.shard];
      if (count == kJobsPerShard) continue;
      store_.Put(j);
      if (++count == kJobsPerShard) ++full;
    }
    on_time_sink_.SetDeliveryRate(&clock_, kAcksPerSecond);
    catch_up_sink_.SetDeliveryRate(&clock_, kAcksPerSecond);
  }

  // Steps the clock from now to `end`, as the ticker would: every slot its on-time request and a
  // catch-up scan; between steps the pool finishes what it can.
  void Run(FiringPool& pool, EpochMs end) {
    SlotRef next = FirstSlotAtOrAfter(clock_.NowMs(), cfg_.tick_ms);
    for (EpochMs t = clock_.NowMs(); t <= end; t += kStepMs) {
      clock_.Set(t);
      on_time_sink_.Poll();
      catch_up_sink_.Poll();
      pool.Quiesce();
      while (SlotMs(next.minute, next.shard, cfg_.tick_ms) <= t) {
        pool.DispatchOnTime(next.shard, next.minute);
        pool.DispatchCatchUpScan();
        last_slot_ = SlotMs(next.minute, next.shard, cfg_.tick_ms);
        if (++next.shard == cfg_.shard_count) {
          next.shard = 0;
          ++next.minute;
        }
      }
      pool.Quiesce();
    }
  }

  SchedulerConfig cfg_;
  FakeClock clock_;
  FakeJobStore store_;
  FakeShardLedger ledger_;
  FakeTriggerSink on_time_sink_;
  FakeTriggerSink catch_up_sink_;
  TopicPolicy policy_;
  RecordingObserver observer_;
  ShardFirer firer_a_;
  ShardFirer firer_b_;
  EpochMs last_slot_ = 0;
};

// Every node was down for 16 minutes: each shard owes 15 minutes (kM-15 .. kM-1) when it restarts
// at kM's first slot. The catch-up of 36,000 triggers takes 90 s of its producer; meanwhile the
// on-time slots of kM and the next minute go out at their slot time, and every missed slot is
// fired exactly once.
TEST_F(CatchUpOrderingTest, OnTimeSlotsStayOnTimeWhileAFifteenMinuteDebtDrains) {
  for (int32_t s = 0; s < 120; ++s) ledger_.SetFiredThrough(s, kM - 16);
  const EpochMs restart = clock_.NowMs();
  {
    FiringPool pool(cfg_, {{&firer_a_, &ledger_}, {&firer_b_, &ledger_}}, clock_, /*backoff_seed=*/7);
    Run(pool, restart + 150'000);
    pool.Stop();
  }

  // The on-time triggers: every slot from the restart (plus the scan's 2 s grace) on.
  const std::vector<SentTrigger> on_time = on_time_sink_.sent();
  std::vector<int64_t> lateness;
  EpochMs last_catch_up_ack = 0;
  for (const SentTrigger& t : on_time) {
    if (t.scheduled_for_ms >= restart + 2000) lateness.push_back(t.acked_ms - t.scheduled_for_ms);
  }
  for (const SentTrigger& t : catch_up_sink_.sent()) {
    EXPECT_LT(t.scheduled_for_ms, restart) << "catch-up producer got an on-time trigger";
    last_catch_up_ack = std::max(last_catch_up_ack, t.acked_ms);
  }
  ASSERT_GT(lateness.size(), 2u * 120 * kJobsPerShard);
  std::sort(lateness.begin(), lateness.end());
  const int64_t p99 = lateness[lateness.size() * 99 / 100];
  const int64_t max = lateness.back();
  RecordProperty("on_time_p99_ms", std::to_string(p99));
  RecordProperty("on_time_max_ms", std::to_string(max));
  std::printf(
      "on-time lateness over %zu triggers: p99 %lld ms, max %lld ms; last catch-up ack %lld ms after the "
      "restart\n",
      lateness.size(), static_cast<long long>(p99), static_cast<long long>(max),
      static_cast<long long>(last_catch_up_ack - restart));
  EXPECT_LT(max, 1000) << "p99 " << p99 << " ms";
  // ... and they went out while the debt drained, not after it.
  EXPECT_GT(last_catch_up_ack, restart + 60'000);
  const auto acked_before = std::count_if(
      on_time.begin(), on_time.end(), [&](const SentTrigger& t) { return t.acked_ms < last_catch_up_ack; });
  EXPECT_GT(acked_before, 120 * kJobsPerShard);

  // Every slot from the first missed minute to the last dispatched slot, exactly once.
  std::set<SlotKey> sent;
  size_t dups = 0;
  for (const FakeTriggerSink* sink : {&on_time_sink_, &catch_up_sink_}) {
    for (const SentTrigger& t : sink->sent()) {
      if (!sent.emplace(t.job_id, t.scheduled_for_ms).second) ++dups;
    }
  }
  EXPECT_EQ(dups, 0u);
  EXPECT_EQ(sent, ExpectedKeys(store_.rows(), SlotMs(kM - 15, 0, 500), last_slot_, cfg_.tick_ms));
  EXPECT_EQ(ledger_.TotalDebt(), 0);
  EXPECT_EQ(observer_.too_old, 0);
  // Shards 110..119 fired kM-1 as on time (its slot was within 5 s of the restart).
  EXPECT_EQ(observer_.caught_up, 120 * 15 - 10);
}

}  // namespace
}  // namespace belfry
