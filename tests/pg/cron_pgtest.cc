// Calendar jobs in PostgreSQL (migration 0006): cron_slots follow their job through upserts,
// replays, pauses and deletes; the tick query finds them with the minute's keys, in priority
// order with interval jobs; the coalesced range returns each once at its latest fire.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "belfry/config.h"
#include "core/calendar_schedule.h"
#include "core/iso_time.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "http/metrics_registry.h"
#include "http/unknown_zone_skips.h"
#include "migrated_database_test.h"
#include "pg/pg_job_store.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int32_t kShard = 7;
const SchedulerConfig kCfg;

JobAction Upsert(const std::string& id, int64_t src_offset, int32_t priority, int32_t shard) {
  JobAction a;
  a.id = id;
  a.spec.id = id;
  a.spec.shard = shard;
  a.spec.topic = "t." + id;
  a.spec.priority = priority;
  a.source = SourcePosition{0, src_offset, 0};
  return a;
}

JobAction CronUpsert(const std::string& id, const std::string& cron, const std::string& zone,
                     int64_t src_offset, int32_t priority = 0, int32_t shard = kShard) {
  JobAction a = Upsert(id, src_offset, priority, shard);
  const Status st = PlanCalendarJob(SystemTimeZones(), cron, zone, *ParseIsoTime("2026-11-01T00:00:00Z"),
                                    kCfg.intervals, &a.spec);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return a;
}

JobAction IntervalUpsert(const std::string& id, int32_t interval, int32_t offset, int64_t src_offset,
                         int32_t priority = 0, int32_t shard = kShard) {
  JobAction a = Upsert(id, src_offset, priority, shard);
  a.spec.interval_minutes = interval;
  a.spec.offset_minutes = offset;
  a.spec.offset_explicit = true;
  return a;
}

JobAction Simple(JobAction::Kind kind, const std::string& id, int64_t src_offset, bool paused = false) {
  JobAction a;
  a.kind = kind;
  a.id = id;
  a.paused = paused;
  a.source = SourcePosition{0, src_offset, 0};
  return a;
}

class CronPgTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
  }

  int64_t Slots(const std::string& id) {
    return db().Exec("SELECT count(*) FROM cron_slots WHERE job_id = '" + id + "'")[0][0].as<int64_t>();
  }

  // (id, due minute) in the order the store returned them.
  std::vector<std::pair<std::string, int64_t>> Due(int64_t first, int64_t last) {
    DueQuery q{
        kShard, first, last, kCfg.tick_ms,
        first == last ? TermsForMinute(kCfg.intervals, last) : TermsForRange(kCfg.intervals, first, last)};
    std::vector<std::pair<std::string, int64_t>> out;
    const Status st =
        store_->ForEachDueJob(q, [&](const DueJob& j) { out.emplace_back(std::string(j.id), j.due_minute); });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

  std::unique_ptr<PgJobStore> store_;
};

int64_t MinuteAt(const char* iso) { return EpochMinuteOf(*ParseIsoTime(iso)); }

TEST_F(CronPgTest, SlotsFollowTheJobThroughUpsertsReplaysAndDeletes) {
  // Deletes and pauses find a job by ShardForId, as for every job a command stores.
  const int32_t s1 = ShardForId("c1", 120), s2 = ShardForId("c2", 120);
  ASSERT_TRUE(
      store_->ApplyActions({CronUpsert("c1", "0,30 9 * * MON-FRI", "Europe/Berlin", 10, 0, s1)}).ok());
  EXPECT_EQ(Slots("c1"), 2);
  // A fixed UTC interval in a zone without offset changes is an interval job: no slots.
  ASSERT_TRUE(store_->ApplyActions({CronUpsert("c2", "*/15 * * * *", "UTC", 11, 0, s2)}).ok());
  EXPECT_EQ(Slots("c2"), 0);
  EXPECT_EQ(db().Exec("SELECT interval_minutes FROM jobs WHERE id = 'c2'")[0][0].as<int>(), 15);
  // Changing the expression replaces the slots.
  ASSERT_TRUE(
      store_->ApplyActions({CronUpsert("c1", "15,45 8,12,18 * * *", "Europe/Berlin", 12, 0, s1)}).ok());
  EXPECT_EQ(Slots("c1"), 2);  // minutes 15 and 45 of the hours in its hour mask
  // A replayed older command changes nothing, slots included.
  ASSERT_TRUE(store_->ApplyActions({CronUpsert("c1", "* * * * *", "Europe/Berlin", 10, 0, s1)}).ok());
  EXPECT_EQ(Slots("c1"), 2);
  EXPECT_EQ(db().Exec("SELECT cron_expr FROM jobs WHERE id = 'c1'")[0][0].as<std::string>(),
            "15,45 8,12,18 * * *");
  // Becoming an interval job drops them; becoming a cron job again brings them back.
  ASSERT_TRUE(store_->ApplyActions({IntervalUpsert("c1", 5, 1, 13, 0, s1)}).ok());
  EXPECT_EQ(Slots("c1"), 0);
  EXPECT_TRUE(db().Exec("SELECT cron_expr FROM jobs WHERE id = 'c1'")[0][0].is_null());
  ASSERT_TRUE(store_->ApplyActions({CronUpsert("c1", "*/20 * * * *", "America/New_York", 14, 0, s1)}).ok());
  EXPECT_EQ(Slots("c1"), 3);  // real time: minute-of-hour codes 0, 20, 40
  // Pause keeps the slots (the tick filters on the job row); delete removes them.
  ASSERT_TRUE(store_->ApplyActions({Simple(JobAction::Kind::kSetPaused, "c1", 15, true)}).ok());
  EXPECT_EQ(Slots("c1"), 3);
  ASSERT_TRUE(store_->ApplyActions({Simple(JobAction::Kind::kDelete, "c1", 16)}).ok());
  EXPECT_EQ(Slots("c1"), 0);
  EXPECT_EQ(db().Exec("SELECT count(*) FROM cron_zones")[0][0].as<int>(), 2);  // Berlin, New York
  // The job reads back with its schedule.
  StatusOr<std::optional<StoredJob>> c2 = store_->GetJob("c2");
  ASSERT_TRUE(c2.ok() && c2->has_value());
  ASSERT_TRUE((*c2)->spec.calendar);
  EXPECT_EQ((*c2)->spec.calendar->cron, "*/15 * * * *");
  EXPECT_EQ((*c2)->spec.calendar->time_zone, "UTC");
  EXPECT_TRUE((*c2)->spec.calendar->as_interval);
}

TEST_F(CronPgTest, TickFindsCronJobsInPriorityOrderWithIntervalJobs) {
  // 2026-11-25 08:00 in Berlin (+01:00) is 07:00Z, a Wednesday.
  const int64_t m = MinuteAt("2026-11-25T07:00:00Z");
  ASSERT_TRUE(
      store_
          ->ApplyActions({CronUpsert("cron-high", "0 8 * * WED", "Europe/Berlin", 1, 5),
                          CronUpsert("cron-zero", "0 8 25 * *", "Europe/Berlin", 2),
                          CronUpsert("cron-low", "0 8 * * *", "Europe/Berlin", 3, -5),
                          CronUpsert("cron-not-today", "0 8 * * THU", "Europe/Berlin", 4),
                          CronUpsert("cron-other-zone", "0 8 * * *", "America/New_York", 5),
                          IntervalUpsert("int-high", 60, 0, 6, 9), IntervalUpsert("int-low", 1, 0, 7, -9),
                          IntervalUpsert("int-zero", 15, 0, 8)})
          .ok());
  const std::vector<std::pair<std::string, int64_t>> due = Due(m, m);
  std::vector<std::string> ids;
  for (const auto& d : due) ids.push_back(d.first);
  ASSERT_EQ(ids.size(), 6u) << ::testing::PrintToString(ids);
  EXPECT_EQ(ids[0], "int-high");
  EXPECT_EQ(ids[1], "cron-high");
  EXPECT_EQ(ids[4], "cron-low");
  EXPECT_EQ(ids[5], "int-low");
  EXPECT_EQ(std::set<std::string>(ids.begin() + 2, ids.begin() + 4),
            (std::set<std::string>{"cron-zero", "int-zero"}));
  // The New York one is due at 13:00Z.
  EXPECT_EQ(Due(MinuteAt("2026-11-25T13:00:00Z"), MinuteAt("2026-11-25T13:00:00Z")).size(),
            4u);  // + the 3 interval jobs
}

TEST_F(CronPgTest, CoalescedRangeReturnsEachCronJobOnceAtItsLatestFire) {
  JobAction ended = CronUpsert("cron-ended", "*/10 * * * *", "Europe/Berlin", 3);
  ended.spec.end_at = *ParseIsoTime("2026-11-25T07:25:00Z");
  JobAction later = CronUpsert("cron-starts-later", "*/10 * * * *", "Europe/Berlin", 4);
  later.spec.start_at = *ParseIsoTime("2026-11-25T08:00:00Z");
  ASSERT_TRUE(store_
                  ->ApplyActions({CronUpsert("cron-every-10", "*/10 * * * *", "Europe/Berlin", 1),
                                  CronUpsert("cron-0805", "5 8 * * *", "Europe/Berlin", 2), ended, later})
                  .ok());
  std::map<std::string, int64_t> due;
  for (const auto& [id, minute] : Due(MinuteAt("2026-11-25T07:00:00Z"), MinuteAt("2026-11-25T07:45:00Z"))) {
    EXPECT_TRUE(due.emplace(id, minute).second) << id << " twice";
  }
  EXPECT_EQ(due, (std::map<std::string, int64_t>{{"cron-every-10", MinuteAt("2026-11-25T07:40:00Z")},
                                                 {"cron-0805", MinuteAt("2026-11-25T07:05:00Z")},
                                                 {"cron-ended", MinuteAt("2026-11-25T07:20:00Z")}}));
}

// Issue 33 §5: a command that changes a job while a re-plan runs wins, and the re-plan, whose
// guarded update then matches no row, adds none of the old expression's slots (else the job
// would fire at the old expression's times too).
TEST_F(CronPgTest, ARePlanAddsNoSlotsToAJobACommandChangedMeanwhile) {
  ASSERT_TRUE(store_->ApplyActions({CronUpsert("berlin-daily", "0 9 * * *", "Europe/Berlin", 1, 0, 4)}).ok());
  const EpochMs now = *ParseIsoTime("2026-11-25T00:00:00Z");
  ASSERT_TRUE(store_->ReplanCalendarJobs("2099z", now, kCfg.intervals).ok());  // records the version
  // As if an older tzdata had planned it as a fixed interval: the next version re-plans it to slots.
  db().Exec(
      "UPDATE jobs SET cron_expr = '*/15 * * * *', interval_minutes = 15, offset_minutes = 0 "
      "WHERE id = 'berlin-daily'");
  db().Exec("DELETE FROM cron_slots WHERE job_id = 'berlin-daily'");
  // A command's transaction changes the job and holds its row while the re-plan reads it.
  pqxx::connection other(db().url());
  pqxx::work command(other);
  command.exec0(
      "UPDATE jobs SET cron_expr = '0 * * * *', time_zone = 'UTC', interval_minutes = 60, offset_minutes = 0 "
      "WHERE id = 'berlin-daily'");
  StatusOr<PgJobStore::ReplanReport> r = Status::FailedPrecondition("not run");
  std::thread replan([&] { r = store_->ReplanCalendarJobs("2100a", now, kCfg.intervals); });
  // The re-plan read the old row and now waits for the command's row lock. On Citus the wait is on
  // the worker that holds the row, which citus_lock_waits shows from the coordinator.
  const bool citus = db().Exec("SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL")[0][0].as<bool>();
  const std::string lock_waits =
      citus ? "SELECT count(*) FROM citus_lock_waits"
            : "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool waited = false;
  while (!waited && std::chrono::steady_clock::now() < deadline) {
    waited = db().Exec(lock_waits)[0][0].as<int>() > 0;
    if (!waited) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  command.commit();
  replan.join();
  EXPECT_TRUE(waited) << "the re-plan never waited for the command's row";
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->checked, 1);
  EXPECT_EQ(r->changed, 0);
  EXPECT_EQ(db().Exec("SELECT interval_minutes FROM jobs WHERE id = 'berlin-daily'")[0][0].as<int>(), 60);
  EXPECT_EQ(Slots("berlin-daily"), 0);
}

TEST_F(CronPgTest, ANewTzdataRePlansTheJobsStoredAsFixedIntervals) {
  ASSERT_TRUE(store_
                  ->ApplyActions({CronUpsert("tokyo-6h", "0 */6 * * *", "Asia/Tokyo", 1, 0, 3),
                                  CronUpsert("berlin-daily", "0 9 * * *", "Europe/Berlin", 2, 0, 4)})
                  .ok());
  EXPECT_EQ(db().Exec("SELECT offset_minutes FROM jobs WHERE id = 'tokyo-6h'")[0][0].as<int>(), 180);
  const EpochMs now = *ParseIsoTime("2026-11-25T00:00:00Z");
  // The first start records the version; nothing was planned under another one.
  StatusOr<PgJobStore::ReplanReport> r = store_->ReplanCalendarJobs("2099z", now, kCfg.intervals);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->version_changed);
  EXPECT_EQ(r->checked, 1);
  EXPECT_EQ(r->changed, 0);
  // As if an older tzdata had planned them: Tokyo at another offset, Berlin without DST (as a
  // 15-minute interval). The new version re-plans both; the slot-planned job is not looked at.
  db().Exec("UPDATE jobs SET offset_minutes = 0 WHERE id = 'tokyo-6h'");
  db().Exec(
      "UPDATE jobs SET cron_expr = '*/15 * * * *', interval_minutes = 15, offset_minutes = 0 "
      "WHERE id = 'berlin-daily'");
  db().Exec("DELETE FROM cron_slots WHERE job_id = 'berlin-daily'");
  r = store_->ReplanCalendarJobs("2099z", now, kCfg.intervals);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->version_changed);  // same version: nothing done
  EXPECT_EQ(db().Exec("SELECT offset_minutes FROM jobs WHERE id = 'tokyo-6h'")[0][0].as<int>(), 0);
  r = store_->ReplanCalendarJobs("2100a", now, kCfg.intervals);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->version_changed);
  EXPECT_EQ(r->checked, 2);
  EXPECT_EQ(r->changed, 2);
  EXPECT_EQ(db().Exec("SELECT offset_minutes FROM jobs WHERE id = 'tokyo-6h'")[0][0].as<int>(), 180);
  EXPECT_EQ(db().Exec("SELECT interval_minutes FROM jobs WHERE id = 'berlin-daily'")[0][0].as<int>(), 0);
  EXPECT_EQ(Slots("berlin-daily"), 4);  // real time: minutes 0, 15, 30, 45 of every hour
  // And it now fires by Berlin's wall clock: 10:15 CET on 2026-11-25 is 09:15Z.
  DueQuery q{4, MinuteAt("2026-11-25T09:15:00Z"), MinuteAt("2026-11-25T09:15:00Z"), kCfg.tick_ms,
             TermsForMinute(kCfg.intervals, MinuteAt("2026-11-25T09:15:00Z"))};
  int found = 0;
  ASSERT_TRUE(store_->ForEachDueJob(q, [&](const DueJob& j) { found += j.id == "berlin-daily"; }).ok());
  EXPECT_EQ(found, 1);
}

// A node whose tz database lacks a zone that a node with newer tzdata accepted skips that zone's
// calendar jobs (it cannot compute their local times). It must not do so silently: each tick
// counts them in belfry_calendar_jobs_unknown_zone_skipped_total, the zone is logged once per
// process, and /readyz lists it. Simulated by renaming the zone in cron_zones to a name no tz
// database has, then starting a fresh store (as a node that starts against that database).
TEST_F(CronPgTest, AJobInAZoneThisNodeLacksIsCountedAndLoggedOncePerZone) {
  // 2026-11-25 08:00 in Berlin (+01:00) is 07:00Z.
  const int64_t m = MinuteAt("2026-11-25T07:00:00Z");
  ASSERT_TRUE(store_
                  ->ApplyActions({CronUpsert("cron-lost", "0 8 * * *", "Europe/Berlin", 1),
                                  CronUpsert("cron-lost-too", "0,30 8 * * *", "Europe/Berlin", 2),
                                  IntervalUpsert("int", 1, 0, 3)})
                  .ok());
  ASSERT_EQ(Due(m, m).size(), 3u);  // while the zone is known
  db().Exec("UPDATE cron_zones SET name = 'Mars/Olympus_Mons' WHERE name = 'Europe/Berlin'");
  db().Exec("UPDATE jobs SET time_zone = 'Mars/Olympus_Mons' WHERE time_zone = 'Europe/Berlin'");

  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  MetricsRegistry metrics("test");
  UnknownZoneSkips skips(metrics.registry());
  PgJobStore node(db().url());
  node.SetUnknownZoneHandler([&skips](std::string_view zone, int64_t jobs) { skips.OnSkipped(zone, jobs); });
  const DueQuery q{kShard, m, m, kCfg.tick_ms, TermsForMinute(kCfg.intervals, m)};
  for (int tick = 0; tick < 2; ++tick) {
    std::vector<std::string> ids;
    ASSERT_TRUE(node.ForEachDueJob(q, [&](const DueJob& j) { ids.emplace_back(j.id); }).ok());
    EXPECT_EQ(ids, std::vector<std::string>{"int"});  // the calendar jobs are skipped
  }
  // A coalesced range skips them too, and counts them once.
  const DueQuery range{kShard, m - 5, m, kCfg.tick_ms, TermsForRange(kCfg.intervals, m - 5, m)};
  ASSERT_TRUE(node.ForEachDueJob(range, [](const DueJob&) {}).ok());
  spdlog::default_logger()->flush();
  spdlog::set_default_logger(previous);

  EXPECT_NE(metrics.Serialize().find("\nbelfry_calendar_jobs_unknown_zone_skipped_total 6\n"), std::string::npos)
      << metrics.Serialize();
  EXPECT_EQ(skips.zones(), std::vector<std::string>{"Mars/Olympus_Mons"});
  const std::string text = log.str();
  const std::string line = "time zone 'Mars/Olympus_Mons' is not in this node's tz database";
  const size_t first = text.find(line);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(line, first + 1), std::string::npos) << "logged more than once:\n" << text;
}

}  // namespace
}  // namespace belfry
