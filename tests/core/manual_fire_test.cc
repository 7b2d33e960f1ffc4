// Trigger and backfill planning on plain values (docs/manual-fires.md), and the ids of the rows
// belfry derives from a job.
#include "core/manual_fire.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/command_parser.h"
#include "core/derived_row_id.h"
#include "core/one_shot_placement.h"
#include "core/retry_policy.h"
#include "core/shard_firer.h"
#include "core/slot_math.h"
#include "core/topic_policy.h"
#include "interval_job_oracle.h"
#include "scheduler_sim.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int64_t kTick = 500;
constexpr int64_t kMinute = 29'931'187;  // 2026-11-28T13:07Z
const ManualFireRules kRules{ShardLayout{120}, 15 * 60'000};

TEST(DerivedRowIdTest, EachKindRoundTrips) {
  const std::string retry = DerivedRowId("a#b", DerivedKind::kRetry, 1'795'354'652'500, 3);
  const std::string trigger = DerivedRowId("a#b", DerivedKind::kTrigger, 1'795'354'652'501);
  const std::string backfill = DerivedRowId("a#b", DerivedKind::kBackfill, 1'795'354'652'500);
  EXPECT_EQ(retry, "a#b#retry#1795354652500#3");
  EXPECT_EQ(trigger, "a#b#trigger#1795354652501");
  EXPECT_EQ(backfill, "a#b#backfill#1795354652500");
  for (const auto& [id, kind, ms, attempt] :
       std::vector<std::tuple<std::string, DerivedKind, EpochMs, int32_t>>{
           {retry, DerivedKind::kRetry, 1'795'354'652'500, 3},
           {trigger, DerivedKind::kTrigger, 1'795'354'652'501, 0},
           {backfill, DerivedKind::kBackfill, 1'795'354'652'500, 0}}) {
    const std::optional<DerivedRowRef> ref = ParseDerivedRowId(id);
    ASSERT_TRUE(ref.has_value()) << id;
    EXPECT_EQ(ref->job_id, "a#b");
    EXPECT_EQ(ref->kind, kind);
    EXPECT_EQ(ref->scheduled_for_ms, ms);
    EXPECT_EQ(ref->attempt, attempt);
  }
  EXPECT_EQ(ParseRetryRowId(retry)->attempt, 3);
  EXPECT_FALSE(ParseRetryRowId(backfill).has_value()) << "a backfill row is not a retry";
  EXPECT_STREQ(DerivedKindName(DerivedKind::kBackfill), "backfill");
}

TEST(DerivedRowIdTest, OtherIdsAreNotDerived) {
  for (const std::string id : {"job", "#trigger#5", "j#trigger#", "j#trigger#5x", "j#backfill#-", "j#retry#5",
                               "j#retry#5#0", "j#trigger#99999999999999999999"}) {
    EXPECT_FALSE(ParseDerivedRowId(id).has_value()) << id;
  }
  EXPECT_FALSE(ReservedIdMarker("j#trig#1").has_value());
  EXPECT_EQ(ReservedIdMarker("x#backfill#y"), "#backfill#");
  EXPECT_EQ(ReservedIdMarker("#retry#"), "#retry#");
}

TEST(ManualTriggerTest, FiresAtTheFirstSlotASecondAfterTheCommandWithItsOwnInstant) {
  const int32_t shard = 10;  // slot at second 5 of each minute
  const EpochMs at = kMinute * 60'000 + 4'500;
  const ManualRow row = PlanManualTrigger("j", shard, at, kRules);
  EXPECT_EQ(row.scheduled_for_ms, at);
  EXPECT_EQ(row.run_minute, kMinute + 1) << "second 5 is under a second after 4.5: next minute";
  EXPECT_EQ(row.late_limit_minute, kMinute + 16);
  EXPECT_EQ(row.row_id, "j#trigger#" + std::to_string(at));
  // Two seconds before the slot: this minute.
  EXPECT_EQ(PlanManualTrigger("j", shard, kMinute * 60'000 + 3'000, kRules).run_minute, kMinute);
  // Never fires earlier than the margin after the command.
  for (EpochMs t = kMinute * 60'000; t < kMinute * 60'000 + 60'000; t += 250) {
    const ManualRow r = PlanManualTrigger("j", shard, t, kRules);
    EXPECT_GE(SlotMs(r.run_minute, shard, kTick), t + kOneShotLateMarginMs) << t;
    EXPECT_LT(SlotMs(r.run_minute, shard, kTick), t + kOneShotLateMarginMs + 60'000) << t;
  }
}

// During a reshard a trigger of a job stored in new shard 130 fires with the shard that fires
// its minute: old shard 10 (second 5, 500 ms tick) before the cut-over, shard 130 (second 32.5,
// 250 ms tick) from it. By the stored shard at the old tick its slot would be 65 s into the
// minute: it would be planned a minute early.
TEST(ManualTriggerTest, FollowsTheFiringShardAndTickOfItsMinuteDuringAReshard) {
  const ShardLayout moving{120, 240, ShardLayout::Phase::kMoving, 40, 0};
  const ManualFireRules during{moving, 15 * 60'000};
  EXPECT_EQ(PlanManualTrigger("j", 130, kMinute * 60'000 + 3'000, during).run_minute, kMinute);
  EXPECT_EQ(PlanManualTrigger("j", 130, kMinute * 60'000 + 5'000, during).run_minute, kMinute + 1);
  const int64_t c = kMinute + 1;
  const ManualFireRules cut{ShardLayout{120, 240, ShardLayout::Phase::kCutover, 119, c}, 15 * 60'000};
  EXPECT_EQ(PlanManualTrigger("j", 130, kMinute * 60'000 + 5'000, cut).run_minute, c);  // 32.5 s in C
  EXPECT_EQ(PlanManualTrigger("j", 130, c * 60'000 + 31'500, cut).run_minute, c);
  EXPECT_EQ(PlanManualTrigger("j", 130, c * 60'000 + 31'501, cut).run_minute, c + 1);
  // The instant of the stored shard's slot in C is stepped off, as in one layout.
  EXPECT_EQ(PlanManualTrigger("j", 130, c * 60'000 + 32'500, cut).scheduled_for_ms, c * 60'000 + 32'501);
}

TEST(ManualTriggerTest, NeverTakesTheInstantOfOneOfTheJobsSlots) {
  const int32_t shard = 10;
  const EpochMs slot = SlotMs(kMinute, shard, kTick);
  EXPECT_EQ(PlanManualTrigger("j", shard, slot, kRules).scheduled_for_ms, slot + 1);
  EXPECT_EQ(PlanManualTrigger("j", shard, slot + 1, kRules).scheduled_for_ms, slot + 1);
}

std::vector<EpochMs> Planned(const BackfillPlan& p) {
  std::vector<EpochMs> out;
  for (const ManualRow& r : p.rows) out.push_back(r.scheduled_for_ms);
  return out;
}

BackfillRange Range(int64_t from_minute, int64_t to_minute, int32_t rate = 60) {
  BackfillRange r;
  r.from_ms = from_minute * 60'000;
  r.to_ms = to_minute * 60'000;
  r.rate_per_minute = rate;
  return r;
}

TEST(BackfillPlanTest, TheRangesSlotsAsTheScheduleHadThem) {
  const EpochMs now = kMinute * 60'000 + 30'000;
  for (const auto& [interval, offset] : std::vector<std::pair<int32_t, int32_t>>{{1, 0}, {5, 3}, {60, 17}, {1440, 600}}) {
    const JobSpec job = IntervalJob(interval, offset, 37);
    const BackfillPlan p =
        PlanBackfill(SystemTimeZones(), job, Range(kMinute - 3000, kMinute - 1), {}, now, kRules);
    ASSERT_TRUE(p.status.ok()) << p.status.ToString();
    EXPECT_EQ(Planned(p), BruteForceSlots(job, kMinute - 3000, kMinute - 1, kTick)) << interval;
    EXPECT_EQ(p.slots, static_cast<int64_t>(p.rows.size()));
    for (const ManualRow& r : p.rows) {
      EXPECT_EQ(r.row_id, DerivedRowId("j", DerivedKind::kBackfill, r.scheduled_for_ms));
      EXPECT_EQ(r.late_limit_minute, -1);
    }
  }
  // The job's own dates apply: a start inside the range cuts it.
  JobSpec dated = IntervalJob(5, 3, 37);
  dated.start_at = (kMinute - 100) * 60'000;
  dated.end_at = (kMinute - 20) * 60'000;
  const BackfillPlan p =
      PlanBackfill(SystemTimeZones(), dated, Range(kMinute - 300, kMinute), {}, kMinute * 60'000, kRules);
  EXPECT_EQ(Planned(p), BruteForceSlots(dated, kMinute - 300, kMinute, kTick));
  EXPECT_EQ(p.slots, 16);
}

TEST(BackfillPlanTest, PacedOldestFirstFromTheFirstSlotASecondAfterTheCommand) {
  const JobSpec job = IntervalJob(1, 0, 10);
  const EpochMs at = kMinute * 60'000 + 4'500;  // the shard's slot this minute is under 1 s away
  const BackfillPlan p =
      PlanBackfill(SystemTimeZones(), job, Range(kMinute - 10, kMinute), {}, at, kRules);  // rate 60
  ASSERT_EQ(p.rows.size(), 10u);
  for (const ManualRow& r : p.rows) EXPECT_EQ(r.run_minute, kMinute + 1);
  const BackfillPlan slow =
      PlanBackfill(SystemTimeZones(), job, Range(kMinute - 10, kMinute, 3), {}, at, kRules);
  ASSERT_EQ(slow.rows.size(), 10u);
  for (size_t i = 0; i < slow.rows.size(); ++i) {
    EXPECT_EQ(slow.rows[i].run_minute, kMinute + 1 + static_cast<int64_t>(i) / 3) << i;
    if (i > 0) {
      EXPECT_GT(slow.rows[i].scheduled_for_ms, slow.rows[i - 1].scheduled_for_ms);
    }
  }
}

TEST(BackfillPlanTest, SlotsAnEarlierBackfillCoveredAreCountedNotPlanned) {
  const JobSpec job = IntervalJob(5, 3, 37);
  const std::vector<std::pair<EpochMs, EpochMs>> covered = {{(kMinute - 100) * 60'000, (kMinute - 50) * 60'000},
                                                            {(kMinute - 20) * 60'000, (kMinute + 10) * 60'000}};
  const BackfillPlan p =
      PlanBackfill(SystemTimeZones(), job, Range(kMinute - 200, kMinute), covered, kMinute * 60'000, kRules);
  std::vector<EpochMs> expected = BruteForceSlots(job, kMinute - 200, kMinute - 100, kTick);
  for (EpochMs t : BruteForceSlots(job, kMinute - 50, kMinute - 20, kTick)) expected.push_back(t);
  EXPECT_EQ(Planned(p), expected);
  EXPECT_EQ(p.covered, 10 + 4);
  EXPECT_EQ(p.slots + p.covered, 40);
}

TEST(BackfillPlanTest, DryRunCountsOnly) {
  BackfillRange r = Range(kMinute - 60, kMinute);
  r.dry_run = true;
  const BackfillPlan p =
      PlanBackfill(SystemTimeZones(), IntervalJob(1, 0, 0), r, {}, kMinute * 60'000, kRules);
  EXPECT_TRUE(p.status.ok());
  EXPECT_EQ(p.slots, 60);
  EXPECT_TRUE(p.rows.empty());
}

TEST(BackfillPlanTest, MoreThanTheLimitIsRefusedWhole) {
  const JobSpec job = IntervalJob(1, 0, 0);
  EXPECT_TRUE(PlanBackfill(SystemTimeZones(), job, Range(kMinute - kMaxBackfillSlots, kMinute), {},
                           kMinute * 60'000, kRules)
                  .status.ok());
  const BackfillPlan p = PlanBackfill(SystemTimeZones(), job, Range(kMinute - kMaxBackfillSlots - 1, kMinute),
                                      {}, kMinute * 60'000, kRules);
  EXPECT_EQ(p.status.reason(), "invalid_backfill");
  EXPECT_TRUE(p.rows.empty());
  // Covered or not, the range's slots count: the limit bounds the work of one command.
  const std::vector<std::pair<EpochMs, EpochMs>> covered = {{(kMinute - 20'000) * 60'000, (kMinute - 10'000) * 60'000}};
  EXPECT_EQ(PlanBackfill(SystemTimeZones(), job, Range(kMinute - 20'000, kMinute), covered, kMinute * 60'000,
                         kRules)
                .status.reason(),
            "invalid_backfill");
}

TEST(BackfillPlanTest, AOneShotHasNothingToBackfill) {
  JobSpec once = IntervalJob(0, 0, 3);
  once.run_at = kMinute * 60'000;
  once.run_minute = kMinute;
  EXPECT_EQ(PlanBackfill(SystemTimeZones(), once, Range(kMinute - 60, kMinute), {}, kMinute * 60'000, kRules)
                .status.reason(),
            "invalid_backfill");
}

// A calendar job, as the command parser plans it.
JobSpec CronJob(const std::string& cron, const std::string& zone) {
  const TopicPolicy policy({"*"}, {});
  CommandRules rules;
  rules.intervals = {1, 5, 15, 60, 1440};
  rules.topic_policy = &policy;
  rules.time_zones = &SystemTimeZones();
  RawCommand raw;
  raw.key = "berlin";
  raw.value = R"({"id":"berlin","cron":")" + cron + R"(","timeZone":")" + zone + R"(","topic":"t"})";
  raw.source = SourcePosition{0, 1, kMinute * 60'000};
  const StatusOr<Command> c = ParseCommand(raw, rules);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? c->spec : JobSpec{};
}

TEST(BackfillPlanTest, ACronJobsSlotsInItsZone) {
  const JobSpec spec = CronJob("30 9 * * MON-FRI", "Europe/Berlin");
  ASSERT_TRUE(spec.calendar.has_value());
  // Monday 2026-11-16 .. Monday 2026-11-23 (exclusive): five weekdays at 09:30 CET = 08:30Z.
  BackfillRange r;
  const EpochMs monday = 1'794'787'200'000;  // 2026-11-16T00:00:00Z
  r.from_ms = monday;
  r.to_ms = monday + 7 * 86'400'000;
  const BackfillPlan p = PlanBackfill(SystemTimeZones(), spec, r, {}, kMinute * 60'000, kRules);
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  ASSERT_EQ(p.rows.size(), 5u);
  for (size_t d = 0; d < 5; ++d) {
    const int64_t minute = (monday + static_cast<EpochMs>(d) * 86'400'000 + 8 * 3'600'000 + 30 * 60'000) / 60'000;
    EXPECT_EQ(p.rows[d].scheduled_for_ms, SlotMs(minute, spec.shard, kTick)) << d;
  }
  // A leap day in a year without one: the search stops at the range's end, not in year 9999.
  const JobSpec leap = CronJob("0 9 29 2 *", "UTC");
  ASSERT_TRUE(leap.calendar.has_value());
  const BackfillPlan none = PlanBackfill(SystemTimeZones(), leap, Range(kMinute - 366 * 1440, kMinute), {},
                                         kMinute * 60'000, kRules);
  EXPECT_TRUE(none.status.ok());
  EXPECT_EQ(none.slots, 0);
}

// The firer sends a manual row as its job, with its own scheduledFor and the manual marker; the
// job's scheduled trigger of the same minute is unchanged.
TEST(ManualFiringTest, AManualRowFiresAsItsJobMarkedManual) {
  SchedulerConfig cfg;
  FakeClock clock(SlotMs(kMinute, 0, 500));
  FakeJobStore store;
  FakeShardLedger ledger(120, clock);
  FakeTriggerSink sink;
  TopicPolicy policy({"*"}, {});
  RecordingObserver observer;
  ShardFirer firer(cfg, "node-a", store, ledger, sink, policy, clock, observer);

  JobSpec job = MakeJob("j", 1, 0);
  const EpochMs asked_at = SlotMs(kMinute - 1, job.shard, 500) + 20'000;
  JobSpec manual = job;
  const ManualRow row = PlanManualTrigger("j", job.shard, asked_at, kRules);
  manual.id = row.row_id;
  manual.run_at = asked_at;
  manual.run_minute = kMinute;
  manual.scheduled_for_ms = row.scheduled_for_ms;
  manual.retry_of = "j";
  store.Put(job);
  store.Put(manual);
  ledger.SetFiredThrough(job.shard, kMinute - 1);
  ASSERT_EQ(firer.FireUpTo(job.shard, kMinute), ShardFirer::Outcome::kFired);
  const std::vector<SentTrigger> sent = sink.sent();
  ASSERT_EQ(sent.size(), 2u);
  int manual_sent = 0;
  for (const SentTrigger& t : sent) {
    EXPECT_EQ(t.job_id, "j");
    if (t.scheduled_for_ms == asked_at) {
      ++manual_sent;
      EXPECT_NE(t.value.find(R"("jobId":"j",)"), std::string::npos) << t.value;
      EXPECT_NE(t.value.find(R"("manual":"trigger",)"), std::string::npos) << t.value;
    } else {
      EXPECT_EQ(t.scheduled_for_ms, SlotMs(kMinute, job.shard, 500));
      EXPECT_EQ(t.value.find("manual"), std::string::npos) << t.value;
    }
  }
  EXPECT_EQ(manual_sent, 1);
}

}  // namespace
}  // namespace belfry
