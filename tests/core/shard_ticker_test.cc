#include "core/shard_ticker.h"

#include <gtest/gtest.h>

#include "scheduler_sim.h"

namespace belfry {
namespace {

constexpr EpochMs kStart = 1795354620000LL + 12'345;  // 2026-11-22T13:37:12.345Z
// The first catch-up scan starts every shard's watermark at its last slot at least 2 s (the scan
// grace) before the start, so the slots of the last 2 s before the start fire too, a little late:
// a slot that recent might be in another node's queue, so it is never recorded as done unfired.
constexpr EpochMs kFirstSlot = kStart - 2000 + 1;

class SchedulerSimTest : public FiringFakes {
 protected:
  SchedulerSimTest()
      : FiringFakes(kStart, {"belfry.commands"}),
        firer_(cfg_, "node-a", store_, ledger_, sink_, policy_, clock_, observer_),
        dispatcher_(cfg_, firer_, ledger_, clock_) {}

  // A few hundred jobs over every interval, some paused, some starting or ending mid-run.
  void SeedJobs(EpochMs run_from, EpochMs run_to) {
    std::mt19937_64 rng(42);
    for (int n = 0; n < 400; ++n) {
      const int interval = cfg_.intervals[rng() % cfg_.intervals.size()];
      JobSpec s = MakeJob("job-" + std::to_string(n), interval, static_cast<int>(rng() % interval));
      const int kind = static_cast<int>(rng() % 10);
      bool paused = false;
      if (kind == 0) paused = true;
      if (kind == 1) s.start_at = run_from + static_cast<int64_t>(rng() % (run_to - run_from));
      if (kind == 2) s.end_at = run_from + static_cast<int64_t>(rng() % (run_to - run_from));
      if (kind == 3) s.start_at = run_to + 1;  // never starts within the run
      store_.Put(s, paused);
    }
  }

  void RunUntil(EpochMs end, int32_t scan_every_ticks = 2) {
    StopSignal stop;
    clock_.StopAt(end);
    ShardTicker ticker(cfg_, clock_, dispatcher_, scan_every_ticks);
    ticker.Run(stop);
  }

  ShardFirer firer_;
  SyncDispatcher dispatcher_;
};

TEST_F(SchedulerSimTest, ThreeSimulatedHoursFireExactlyTheDueSlots) {
  const EpochMs end = kStart + 3 * 3600 * 1000;
  SeedJobs(kStart, end);
  RunUntil(end);
  size_t dups = 0;
  const auto sent = SentKeys(sink_, &dups);
  const auto want = ExpectedKeys(store_.rows(), kFirstSlot, end, cfg_.tick_ms);
  EXPECT_EQ(dups, 0u);
  EXPECT_GT(want.size(), 5'000u);  // the run is not trivially empty
  EXPECT_EQ(sent, want);
  EXPECT_EQ(observer_.caught_up + observer_.skipped + observer_.too_old, 0);
  // Paused jobs and jobs that never start fire nothing.
  for (const auto& [id, row] : store_.rows()) {
    if (row.paused || (row.spec.start_at && *row.spec.start_at > end)) {
      for (const auto& k : sent) ASSERT_NE(std::get<0>(k), id);
    }
  }
}

TEST_F(SchedulerSimTest, TriggerCarriesSlotTimeAndKey) {
  JobSpec s = MakeJob("solo", 1, 0);
  s.key = "custom-key";
  store_.Put(s);
  RunUntil(kStart + 3 * 60'000);
  const auto sent = sink_.sent();
  ASSERT_GE(sent.size(), 2u);
  for (const SentTrigger& t : sent) {
    EXPECT_EQ(t.key, "custom-key");
    EXPECT_EQ(t.topic, "out.1");
    EXPECT_EQ(t.scheduled_for_ms % 60'000, s.shard * 500);
    EXPECT_NE(t.value.find(R"("jobDetails":{"n":1})"), std::string::npos);
  }
}

TEST_F(SchedulerSimTest, OutageUnderFireAllFiresEveryMissedSlotWithOriginalTime) {
  SeedJobs(kStart, kStart + 3600 * 1000);
  RunUntil(kStart + 20 * 60'000);
  clock_.Advance(5 * 60'000);  // every node down for five minutes
  const EpochMs end = clock_.NowMs() + 10 * 60'000;
  RunUntil(end);
  size_t dups = 0;
  EXPECT_EQ(SentKeys(sink_, &dups), ExpectedKeys(store_.rows(), kFirstSlot, end, cfg_.tick_ms));
  EXPECT_EQ(dups, 0u);
  EXPECT_GT(observer_.caught_up, 500);  // 120 shards x ~5 minutes
  EXPECT_EQ(observer_.skipped, 0);
}

TEST_F(SchedulerSimTest, OutageUnderSkipFiresNoneOfTheMissedSlots) {
  cfg_.misfire_policy = MisfirePolicy::kSkip;
  SeedJobs(kStart, kStart + 3600 * 1000);
  const EpochMs down = kStart + 20 * 60'000;
  RunUntil(down);
  clock_.Advance(5 * 60'000);
  const EpochMs up = clock_.NowMs();
  const EpochMs end = up + 10 * 60'000;
  RunUntil(end);
  auto want = ExpectedKeys(store_.rows(), kFirstSlot, down, cfg_.tick_ms);
  for (const auto& k : ExpectedKeys(store_.rows(), up + 1, end, cfg_.tick_ms)) want.insert(k);
  auto sent = SentKeys(sink_);
  // Slots between `down` and `up` are skipped, except that each shard's first slot after the restart
  // may be one whose time had just passed by less than the misfire threshold.
  for (const auto& k : want) EXPECT_TRUE(sent.count(k)) << std::get<0>(k) << "@" << std::get<1>(k);
  for (const auto& k : sent) {
    EXPECT_TRUE(want.count(k) || std::get<1>(k) >= up - cfg_.misfire_threshold_ms) << std::get<1>(k);
  }
  EXPECT_GT(observer_.skipped, 400);
  EXPECT_EQ(observer_.caught_up, 0);
}

TEST_F(SchedulerSimTest, OutageUnderCoalesceFiresEachDueJobOnce) {
  cfg_.misfire_policy = MisfirePolicy::kCoalesce;
  SeedJobs(kStart, kStart + 3600 * 1000);
  RunUntil(kStart + 20 * 60'000);
  sink_.Clear();
  clock_.Advance(5 * 60'000);
  const EpochMs up = clock_.NowMs();
  RunUntil(up + 70'000);
  // Within the catch-up, a 1-minute job fires at most once for the whole gap (plus its on-time slots).
  const auto sent = sink_.sent();
  std::map<std::string, int> late_per_job;
  for (const SentTrigger& t : sent) {
    if (t.scheduled_for_ms < up - cfg_.misfire_threshold_ms) ++late_per_job[t.job_id];
  }
  ASSERT_FALSE(late_per_job.empty());
  for (const auto& [id, n] : late_per_job) EXPECT_EQ(n, 1) << id;
  EXPECT_GT(observer_.caught_up, 400);
}

TEST_F(SchedulerSimTest, BrokerFailureRetriesWithoutLosingSlots) {
  SeedJobs(kStart, kStart + 3600 * 1000);
  sink_.FailNextBatches(50);
  const EpochMs end = kStart + 10 * 60'000;
  RunUntil(end);
  // Slots whose firing failed are retried by the catch-up scan; nothing is lost. The last few
  // seconds may still be waiting for their retry when the run stops.
  const auto sent = SentKeys(sink_);
  for (const auto& k : ExpectedKeys(store_.rows(), kStart, end - 10'000, cfg_.tick_ms)) {
    EXPECT_TRUE(sent.count(k)) << std::get<0>(k) << "@" << std::get<1>(k);
  }
  EXPECT_EQ(observer_.failures, 50);
}

TEST_F(SchedulerSimTest, PolicyIsCheckedAgainWhenFiring) {
  store_.Put(MakeJob("ok", 1, 0));
  JobSpec bad = MakeJob("bad", 1, 0);
  bad.topic = "belfry.commands";  // stored before a config change made it forbidden
  store_.Put(bad);
  RunUntil(kStart + 2 * 60'000);
  for (const SentTrigger& t : sink_.sent()) EXPECT_EQ(t.job_id, "ok");
  EXPECT_GE(observer_.refused, 1);
  EXPECT_FALSE(sink_.sent().empty());
}

// On a fresh database a node stops 40 s after it started, before its ticker reached every
// shard; another node starts 5 s later. Every slot from the first start on must fire: the
// shards the first node never fired got their watermark from its first scan, so the second
// node's catch-up fires what fell in the gap.
TEST_F(SchedulerSimTest, NodeStoppingInItsFirstMinuteOnAFreshDatabaseLeavesNoSlotBehind) {
  for (int n = 0; n < 240; ++n) store_.Put(MakeJob("fresh-" + std::to_string(n), 1, 0));
  const EpochMs stop_a = kStart + 40'000;
  RunUntil(stop_a);
  clock_.Set(stop_a + 5'000);
  ShardFirer firer_b(cfg_, "node-b", store_, ledger_, sink_, policy_, clock_, observer_);
  SyncDispatcher dispatcher_b(cfg_, firer_b, ledger_, clock_);
  const EpochMs end = kStart + 3 * 60'000;
  StopSignal stop;
  clock_.StopAt(end);
  ShardTicker ticker_b(cfg_, clock_, dispatcher_b);
  ticker_b.Run(stop);
  size_t dups = 0;
  const auto sent = SentKeys(sink_, &dups);
  for (const auto& k : ExpectedKeys(store_.rows(), kStart, end, cfg_.tick_ms)) {
    EXPECT_TRUE(sent.count(k)) << std::get<0>(k) << "@" << std::get<1>(k);
  }
  EXPECT_EQ(dups, 0u);
  for (const auto& [id, slot] : sent) EXPECT_GE(slot, kStart - 2000) << id;  // nothing from before the start
}

// A node dies at a slot while it holds that shard's claim. This node's on-time firing finds the
// shard claimed; its catch-up scan fires the shard once the dead node's lease has expired. So
// the slot is fired between claim_lease and claim_lease + one scan period after it: 3.0-3.5 s
// with a scan on every tick, as `belfry serve` runs it, inside the 5 s issue 3 requires.
TEST_F(SchedulerSimTest, DeadNodesClaimIsTakenOverWithinLeasePlusOneScanPeriod) {
  for (const int32_t scan_every_ticks : {1, 2}) {
    SCOPED_TRACE("scan every " + std::to_string(scan_every_ticks) + " ticks");
    const JobSpec s = MakeJob("victim-" + std::to_string(scan_every_ticks), 1, 0);
    store_.Put(s);
    RunUntil(clock_.NowMs() + 2 * 60'000, scan_every_ticks);  // the shard has a watermark
    const int64_t m = LastSlotMinuteAtOrBefore(clock_.NowMs(), s.shard, cfg_.tick_ms) + 1;
    const EpochMs slot = SlotMs(m, s.shard, cfg_.tick_ms);
    RunUntil(slot - 1, scan_every_ticks);
    clock_.Set(slot);
    ASSERT_TRUE(ledger_.Claim(s.shard, m, "node-dead", cfg_.claim_lease_ms)->claimed);
    const size_t before = sink_.sent().size();
    RunUntil(slot + 10'000, scan_every_ticks);

    bool fired = false;
    for (const ShardMinuteReport& r : observer_.fired) {
      if (r.shard != s.shard || r.last_minute != m) continue;
      fired = true;
      EXPECT_GE(r.lateness_ms, cfg_.claim_lease_ms) << "fired while the dead node's lease was live";
      EXPECT_LE(r.lateness_ms, cfg_.claim_lease_ms + scan_every_ticks * cfg_.tick_ms);
    }
    EXPECT_TRUE(fired) << "the dead node's shard-minute was never fired";
    bool victim_sent = false;
    const std::vector<SentTrigger> sent = sink_.sent();
    for (size_t i = before; i < sent.size(); ++i) {
      if (sent[i].job_id == s.id && sent[i].scheduled_for_ms == slot) victim_sent = true;
    }
    EXPECT_TRUE(victim_sent);
    EXPECT_EQ(ledger_.FiredThrough(s.shard).value_or(0), m);
  }
}

// The ticker follows its LayoutCell: across a reshard's cut-over, minute C-1 is ticked as 120
// shards at 500 ms and minute C as 240 at 250 ms, each slot at its time (docs/resharding.md).
class RecordingDispatcher final : public TickDispatcher {
 public:
  explicit RecordingDispatcher(Clock& clock) : clock_(clock) {}
  void DispatchOnTime(int32_t shard, int64_t minute) override {
    slots.push_back({minute, shard, clock_.NowMs()});
  }
  void DispatchCatchUpScan() override {}
  struct Slot {
    int64_t minute;
    int32_t shard;
    EpochMs at;
  };
  std::vector<Slot> slots;

 private:
  Clock& clock_;
};

TEST(ShardTickerTest, TicksTheNewLayoutFromTheCutOverMinute) {
  const int64_t c = EpochMinuteOf(kStart) + 2;
  FakeClock clock((c - 1) * 60'000);
  RecordingDispatcher dispatcher(clock);
  SchedulerConfig cfg;
  LayoutCell layout(ShardLayout{120, 240, ShardLayout::Phase::kCutover, 119, c});
  StopSignal stop;
  clock.StopAt((c + 1) * 60'000);
  ShardTicker ticker(cfg, clock, dispatcher, 2, &layout);
  ticker.Run(stop);
  std::map<int64_t, std::set<int32_t>> per_minute;
  for (const auto& s : dispatcher.slots) {
    EXPECT_EQ(s.at, LayoutSlotMs(layout.Get(), s.minute, s.shard)) << s.minute << "/" << s.shard;
    EXPECT_TRUE(per_minute[s.minute].insert(s.shard).second) << "twice: " << s.minute << "/" << s.shard;
  }
  EXPECT_EQ(per_minute[c - 1].size(), 120u);
  EXPECT_EQ(per_minute[c].size(), 240u);
  EXPECT_EQ(*per_minute[c].rbegin(), 239);
}

// The cell takes a layout only when it moves a reshard forward, and tells its listener of each
// change once: a repeat or an older record (a claim made before the move went on) is ignored.
TEST(LayoutCellTest, TakesOnlyNewerLayoutsAndReportsEachChangeOnce) {
  std::vector<ShardLayout> changes;
  LayoutCell cell(ShardLayout{120}, [&changes](const ShardLayout& l) { changes.push_back(l); });
  const ShardLayout moving_3{120, 240, ShardLayout::Phase::kMoving, 3, 0};
  const ShardLayout moving_7{120, 240, ShardLayout::Phase::kMoving, 7, 0};
  const ShardLayout cutover{120, 240, ShardLayout::Phase::kCutover, 119, 29'000'000};
  cell.Offer(ShardLayout{120});
  cell.Offer(moving_7);
  cell.Offer(moving_7);
  cell.Offer(moving_3);
  EXPECT_EQ(cell.Get(), moving_7);
  cell.Offer(cutover);
  cell.Offer(ShardLayout{120});
  EXPECT_EQ(cell.Get(), cutover);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0], moving_7);
  EXPECT_EQ(changes[1], cutover);
}

// A layout learnt mid-minute (a claim brought it) applies from the next slot.
TEST(ShardTickerTest, ALayoutLearntLateTakesEffectAtTheNextSlot) {
  const int64_t c = EpochMinuteOf(kStart) + 2;
  FakeClock clock((c - 1) * 60'000);
  LayoutCell layout(ShardLayout{120});
  struct Learner final : public TickDispatcher {
    Learner(Clock& clock, LayoutCell& layout, int64_t c) : clock_(clock), layout_(layout), c_(c) {}
    void DispatchOnTime(int32_t shard, int64_t minute) override {
      seen[minute].insert(shard);
      if (minute == c_ - 1 && shard == 60) layout_.Offer(ShardLayout{120, 240, ShardLayout::Phase::kCutover, 119, c_});
    }
    void DispatchCatchUpScan() override {}
    Clock& clock_;
    LayoutCell& layout_;
    int64_t c_;
    std::map<int64_t, std::set<int32_t>> seen;
  } dispatcher(clock, layout, c);
  SchedulerConfig cfg;
  StopSignal stop;
  clock.StopAt((c + 1) * 60'000);
  ShardTicker ticker(cfg, clock, dispatcher, 2, &layout);
  ticker.Run(stop);
  EXPECT_EQ(dispatcher.seen[c - 1].size(), 120u);
  EXPECT_EQ(dispatcher.seen[c].size(), 240u);
}

TEST(LayoutCellTest, OnlyMovesForward) {
  LayoutCell cell(ShardLayout{120});
  cell.Offer(ShardLayout{120, 240, ShardLayout::Phase::kMoving, 5, 0});
  cell.Offer(ShardLayout{120, 240, ShardLayout::Phase::kMoving, 3, 0});  // an older read
  EXPECT_EQ(cell.Get().moved_through, 5);
  cell.Offer(ShardLayout{120});  // older still
  EXPECT_EQ(cell.Get().phase, ShardLayout::Phase::kMoving);
  cell.Offer(ShardLayout{120, 240, ShardLayout::Phase::kCutover, 119, 77});
  EXPECT_EQ(cell.Get().phase, ShardLayout::Phase::kCutover);
  cell.Offer(ShardLayout{240});  // done: stable at the new count
  EXPECT_EQ(cell.Get().from, 240);
  EXPECT_EQ(cell.Get().phase, ShardLayout::Phase::kStable);
  cell.Offer(ShardLayout{120, 240, ShardLayout::Phase::kCutover, 119, 77});
  EXPECT_EQ(cell.Get().from, 240);
}

}  // namespace
}  // namespace belfry
