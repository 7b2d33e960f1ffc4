// Calendar (cron) jobs end to end on the real servers (issue 15, docs/calendar-schedules.md).
//
// CronJobsFireThroughBelfry: commands over Kafka to the real `belfry serve`, triggers read back
// from Kafka at each job's shard second; the firing writes no job or slot row. Beside them,
// interval jobs, one-shots, start and end dates and a paused job: GET /v1/load's projection of
// the target minute, read before it, must equal what fired in it, shard by shard (issue 18).
// DstTransitionsOnTheRealServers: the scheduler's own ShardFirer over the real PgJobStore,
// PgShardLedger and KafkaTriggerSink, with its injected Clock set to the hours around three DST
// transitions; the store is replaced mid-transition, as a restart would.
//
// Why it takes minutes of real time: CronJobsFireThroughBelfry waits for real cron minutes at each
// job's shard second. DstTransitionsOnTheRealServers injects the clock and does not wait: its
// minutes are the real servers' work, one real firing per shard-minute of the simulated hours.
// The two run as separate ctest entries (SPLIT_TESTS), so they overlap.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "belfry/config.h"
#include "belfry/scheduler_observer.h"
#include "belfry_process.h"
#include "core/calendar_schedule.h"
#include "core/iso_time.h"
#include "core/shard_firer.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "core/topic_policy.h"
#include "fakes/fake_clock.h"
#include "itest_support.h"
#include "kafka/kafka_trigger_sink.h"
#include "kafka/topic_admin.h"
#include "pg/pg_job_store.h"
#include "pg/pg_shard_ledger.h"
#include "plain_producer.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

using Fired = std::set<std::pair<std::string, EpochMs>>;  // (job id, scheduledFor)

Fired TriggersOf(const std::vector<TailRecord>& records, const std::string& id_prefix,
                 std::string* problems) {
  Fired out;
  for (const TailRecord& r : records) {
    const auto id = r.headers.find("belfry-job-id");
    const auto at = r.headers.find("belfry-scheduled-for");
    if (id == r.headers.end() || at == r.headers.end()) continue;
    if (id->second.rfind(id_prefix, 0) != 0) continue;
    const EpochMs scheduled_for = std::stoll(at->second);
    if (!out.emplace(id->second, scheduled_for).second) {
      *problems += "duplicate " + id->second + " @ " + FormatIsoTime(scheduled_for) + "\n";
    }
    if (r.timestamp_ms + 5 < scheduled_for) {
      *problems += "early " + id->second + " @ " + FormatIsoTime(scheduled_for) + "\n";
    }
  }
  return out;
}

std::string Describe(const Fired& want, const Fired& got) {
  std::string out;
  for (const auto& w : want) {
    if (!got.count(w)) out += "missing " + w.first + " @ " + FormatIsoTime(w.second) + "\n";
  }
  for (const auto& g : got) {
    if (!want.count(g)) out += "unexpected " + g.first + " @ " + FormatIsoTime(g.second) + "\n";
  }
  return out;
}

// --------------------------------------------------------------------------------------------

struct CronCase {
  std::string id, cron, zone;
  bool slots = true;  // stored with cron_slots (false: as a fixed UTC interval)
};

TEST(CronItest, CronJobsFireThroughBelfryAtTheirShardSecond) {
  std::unique_ptr<ItestWorld> world = ItestWorld::Create("cron");
  ASSERT_NE(world, nullptr);
  PlainProducer producer(world->brokers);
  TopicCollector triggers(world->brokers, {world->trigger_topic});
  TopicCollector results(world->brokers, {world->results_topic});
  BelfryProcess server(world->Env(), "/tmp/belfry-" + world->run_id + "-cron.log");
  ASSERT_TRUE(server.WaitForLog("belfry serving", 30'000)) << server.Log();

  // The next minute at least 15 s away, so that every command is applied before its slots.
  const int64_t target = EpochMinuteOf(WallMs() + 15'000) + 1;
  auto at_local = [&](const char* zone, const char* dow) {
    const int64_t local = target + UtcOffsetMinutes(*LocateTimeZone(SystemTimeZones(), zone), target);
    const int64_t mod = ((local % 1440) + 1440) % 1440;
    return std::to_string(mod % 60) + " " + std::to_string(mod / 60) + " * * " + dow;
  };
  const StatusOr<const TimeZone*> ny = LocateTimeZone(SystemTimeZones(), "America/New_York");
  const int64_t ny_local = target + UtcOffsetMinutes(*ny, target);
  const int ny_weekday =
      static_cast<int>((((ny_local / 1440) + 4) % 7 + 7) % 7);  // 1970-01-01 was a Thursday
  const std::string other_weekday = std::to_string((ny_weekday + 3) % 7);

  const std::vector<CronCase> cases = {
      {"cron-berlin-daily", at_local("Europe/Berlin", "*"), "Europe/Berlin"},
      {"cron-ny-weekday", at_local("America/New_York", std::to_string(ny_weekday).c_str()),
       "America/New_York"},
      {"cron-ny-other-weekday", at_local("America/New_York", other_weekday.c_str()), "America/New_York"},
      {"cron-lordhowe-daily", at_local("Australia/Lord_Howe", "*"), "Australia/Lord_Howe"},
      {"cron-berlin-every-2", "*/2 * * * *", "Europe/Berlin"},
      {"cron-kathmandu-daily", at_local("Asia/Kathmandu", "*"), "Asia/Kathmandu", false},
      {"cron-utc-every-minute", "* * * * *", "UTC", false},
  };
  for (const CronCase& c : cases) {
    const std::string value = R"({"id":")" + c.id + R"(","cron":")" + c.cron + R"(","timeZone":")" + c.zone +
                              R"(","topic":")" + world->trigger_topic + R"(","jobDetails":{"zone":")" +
                              c.zone + R"("}})";
    EXPECT_GE(producer.Send(world->commands_topic, c.id, value).second, 0);
  }
  // The other kinds of job, for the load projection (ids "load-..."; the cron checks ignore them).
  const std::string topic_field = R"(,"topic":")" + world->trigger_topic + R"("})";
  std::vector<std::pair<std::string, std::string>> load_commands;  // (key, value)
  for (int i = 0; i < 40; ++i) {
    const int interval = std::vector<int>{1, 2, 3, 5}[static_cast<size_t>(i % 4)];
    const std::string id = "load-i" + std::to_string(i);
    load_commands.push_back({id, R"({"id":")" + id + R"(","intervalMinutes":)" + std::to_string(interval) +
                                     R"(,"offsetMinutes":)" + std::to_string((i * 7) % interval) + topic_field});
  }
  for (int i = 0; i < 4; ++i) {  // three one-shots in the target minute, one after it
    const std::string id = "load-once" + std::to_string(i);
    const EpochMs run_at = (target + (i == 3 ? 3 : 0)) * kMsPerMinute + 10'000;
    load_commands.push_back({id, R"({"id":")" + id + R"(","runAt":")" + FormatIsoTime(run_at) + "\"" + topic_field});
  }
  const std::string half = FormatIsoTime(target * kMsPerMinute + 30'000);  // between the shards' slots
  load_commands.push_back({"load-start", R"({"id":"load-start","intervalMinutes":1,"offsetMinutes":0,"startDateTime":")" +
                                             half + "\"" + topic_field});
  load_commands.push_back({"load-end", R"({"id":"load-end","intervalMinutes":1,"offsetMinutes":0,"endDateTime":")" +
                                           half + "\"" + topic_field});
  load_commands.push_back(
      {"load-paused", R"({"id":"load-paused","intervalMinutes":1,"offsetMinutes":0)" + topic_field});
  load_commands.push_back({"load-paused", R"({"op":"pause","id":"load-paused"})"});
  for (const auto& [key, value] : load_commands) EXPECT_GE(producer.Send(world->commands_topic, key, value).second, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        int applied = 0;
        for (const TailRecord& r : results.records()) {
          if (r.value && r.value->find("\"status\":\"applied\"") != std::string::npos) ++applied;
        }
        return applied == static_cast<int>(cases.size() + load_commands.size());
      },
      30'000))
      << "outcomes: " << results.size() << "\n"
      << server.Log();
  const EpochMs from = WallMs() + 1000;
  ASSERT_LT(from, target * kMsPerMinute) << "the commands took too long to apply";
  // The projection of the target minute, before it comes.
  int load_status = 0;
  const std::optional<std::string> load_body =
      HttpGet(server.AdminPort(),
              "/v1/load?from=" + FormatIsoTime(target * kMsPerMinute) + "&to=" +
                  FormatIsoTime((target + 1) * kMsPerMinute) + "&shards=true",
              &load_status);
  ASSERT_EQ(load_status, 200) << load_body.value_or("");
  const nlohmann::json load = nlohmann::json::parse(*load_body);
  ASSERT_EQ(load["minutes"].size(), 1u);
  const std::vector<int64_t> projected = load["minutes"][0]["shards"].get<std::vector<int64_t>>();
  ASSERT_EQ(projected.size(), 120u);

  // Slot-planned jobs have cron_slots rows; the fixed-interval ones have none.
  for (const CronCase& c : cases) {
    const int64_t slots =
        CountFresh(world->db->url(), "SELECT count(*) FROM cron_slots WHERE job_id = '" + c.id + "'");
    EXPECT_EQ(slots > 0, c.slots) << c.id << " has " << slots << " slot rows";
  }
  const std::string versions_sql =
      "SELECT string_agg(id || ':' || xmin::text, ',' ORDER BY id) FROM jobs WHERE id LIKE 'cron-%'";
  const std::string slot_versions_sql =
      "SELECT string_agg(job_id || ':' || key || ':' || xmin::text, ',' ORDER BY job_id, key) FROM "
      "cron_slots";
  const auto versions_before = QueryFresh(world->db->url(), versions_sql);
  const auto slot_versions_before = QueryFresh(world->db->url(), slot_versions_sql);
  ASSERT_TRUE(versions_before && slot_versions_before);

  // Judge every slot in [from, end of the target minute].
  const EpochMs to = (target + 1) * kMsPerMinute;
  SleepUntilWallMs(to + 8000);
  const SchedulerConfig cfg;
  Fired want;
  for (const CronCase& c : cases) {
    JobSpec spec;
    ASSERT_TRUE(PlanCalendarJob(SystemTimeZones(), c.cron, c.zone, from, cfg.intervals, &spec).ok())
        << c.cron;
    spec.shard = ShardForId(c.id, cfg.shard_count);
    for (EpochMs t : NextJobTriggerTimes(SystemTimeZones(), spec, cfg.tick_ms, from - 1, 1000)) {
      if (t >= to) break;
      want.emplace(c.id, t);
    }
  }
  std::string problems;
  Fired got;
  for (const auto& g : TriggersOf(triggers.records(), "cron-", &problems)) {
    if (g.second >= from && g.second < to) got.insert(g);
  }
  EXPECT_EQ(problems, "");
  EXPECT_EQ(Describe(want, got), "");
  // The daily ones fire exactly at the target minute, at their shard's second; the other weekday not.
  for (const char* id :
       {"cron-berlin-daily", "cron-ny-weekday", "cron-lordhowe-daily", "cron-kathmandu-daily"}) {
    EXPECT_TRUE(got.count({id, SlotMs(target, ShardForId(id, 120), 500)})) << id;
  }
  for (const auto& g : got) EXPECT_NE(g.first, "cron-ny-other-weekday");
  EXPECT_GE(got.size(), 6u);

  // What fired in the target minute, shard by shard, is what GET /v1/load projected.
  std::vector<int64_t> fired(120, 0);
  for (const char* prefix : {"cron-", "load-"}) {
    for (const auto& g : TriggersOf(triggers.records(), prefix, &problems)) {
      if (g.second >= target * kMsPerMinute && g.second < (target + 1) * kMsPerMinute) {
        ++fired[static_cast<size_t>(ShardForId(g.first, 120))];
      }
      EXPECT_NE(g.first, "load-paused") << "a paused job fired";
    }
  }
  EXPECT_EQ(problems, "");
  EXPECT_EQ(projected, fired);
  EXPECT_EQ(load["total"].get<int64_t>(), std::accumulate(fired.begin(), fired.end(), int64_t{0}));
  EXPECT_GE(load["total"].get<int64_t>(), 10 + 3 + 4);  // the 1-minute jobs, the one-shots, the daily crons

  // Firing wrote nothing: the job and slot rows are the versions the commands left.
  EXPECT_EQ(QueryFresh(world->db->url(), versions_sql)->at(0).at(0).as<std::string>(),
            versions_before->at(0).at(0).as<std::string>());
  EXPECT_EQ(QueryFresh(world->db->url(), slot_versions_sql)->at(0).at(0).as<std::string>(),
            slot_versions_before->at(0).at(0).as<std::string>());
}

// --------------------------------------------------------------------------------------------

int64_t MinuteAt(const char* iso) { return EpochMinuteOf(*ParseIsoTime(iso)); }

TEST(CronItest, DstTransitionsOnTheRealServers) {
  std::unique_ptr<ItestWorld> world = ItestWorld::Create("crondst");
  ASSERT_NE(world, nullptr);
  KafkaConfig kafka;
  kafka.brokers = world->brokers;
  ASSERT_TRUE(EnsureTopics(kafka, {TopicSpec{world->trigger_topic, 2, -1, {}}}).ok());
  TopicCollector triggers(world->brokers, {world->trigger_topic});

  SchedulerConfig cfg;
  cfg.workers = 1;
  const std::vector<CronCase> cases = {
      {"dst-ny-0230", "30 2 * * *", "America/New_York"},           // moved out of the March gap
      {"dst-ny-merged", "0,30 2 * * *", "America/New_York"},       // two gap times, one fire
      {"dst-ny-0130", "30 1 * * *", "America/New_York"},           // November: first 01:30 only
      {"dst-ny-half-hourly", "*/30 * * * *", "America/New_York"},  // real time: both 01:30s
      {"dst-lordhowe-0215", "15 2 * * *", "Australia/Lord_Howe"},  // a 30-minute gap
      {"dst-lordhowe-0145", "45 1 * * *", "Australia/Lord_Howe"},  // a 30-minute repeat
  };
  std::vector<JobAction> actions;
  std::set<int32_t> shards;
  for (size_t i = 0; i < cases.size(); ++i) {
    JobAction a;
    a.id = cases[i].id;
    a.spec.id = a.id;
    a.spec.topic = world->trigger_topic;
    a.spec.shard = ShardForId(a.id, cfg.shard_count);
    a.source = SourcePosition{0, static_cast<int64_t>(i), 0};
    ASSERT_TRUE(PlanCalendarJob(SystemTimeZones(), cases[i].cron, cases[i].zone,
                                *ParseIsoTime("2026-01-01T00:00:00Z"), cfg.intervals, &a.spec)
                    .ok());
    shards.insert(a.spec.shard);
    actions.push_back(std::move(a));
  }
  {
    PgJobStore store(world->db->url());
    ASSERT_TRUE(store.ApplyActions(actions).ok());
  }
  StatusOr<std::unique_ptr<KafkaTriggerSink>> sink = KafkaTriggerSink::Create(kafka);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  const TopicPolicy policy({"*"}, {});
  NullSchedulerObserver observer;

  struct Window {
    const char* from;
    const char* to;
    const char* restart_at;  // a new store and firer here, as after a restart
  };
  const Window windows[] = {
      {"2026-03-08T05:00:00Z", "2026-03-08T09:00:00Z", "2026-03-08T07:00:00Z"},  // NY spring forward, 07:00Z
      {"2026-11-01T04:00:00Z", "2026-11-01T08:00:00Z", "2026-11-01T06:15:00Z"},  // NY fall back, 06:00Z
      {"2026-10-03T14:30:00Z", "2026-10-03T16:30:00Z", "2026-10-03T15:30:00Z"},  // Lord Howe spring, 15:30Z
      {"2026-04-04T14:00:00Z", "2026-04-04T16:00:00Z", "2026-04-04T15:10:00Z"},  // Lord Howe fall, 15:00Z
  };
  Fired want;
  for (const Window& w : windows) {
    const int64_t first = MinuteAt(w.from), last = MinuteAt(w.to) - 1;
    // A fresh watermark per window: the first firing of a shard plans just its target minute.
    ASSERT_GE(
        CountFresh(world->db->url(),
                   "WITH u AS (UPDATE shard_state SET fired_through = NULL, claim_node = NULL, claim_until = "
                   "NULL RETURNING 1) SELECT count(*) FROM u"),
        0);
    FakeClock clock(SlotMs(first, 0, cfg.tick_ms));
    auto store = std::make_unique<PgJobStore>(world->db->url());
    auto ledger = std::make_unique<PgShardLedger>(world->db->url());
    auto firer =
        std::make_unique<ShardFirer>(cfg, "dst-node", *store, *ledger, **sink, policy, clock, observer);
    for (int64_t m = first; m <= last; ++m) {
      if (m == MinuteAt(w.restart_at)) {
        firer.reset();
        store = std::make_unique<PgJobStore>(world->db->url());
        ledger = std::make_unique<PgShardLedger>(world->db->url());
        firer =
            std::make_unique<ShardFirer>(cfg, "dst-node-2", *store, *ledger, **sink, policy, clock, observer);
      }
      for (int32_t shard : shards) {
        clock.Set(SlotMs(m, shard, cfg.tick_ms) + 50);
        Status error;
        ASSERT_EQ(firer->FireUpTo(shard, m, &error), ShardFirer::Outcome::kFired)
            << FormatIsoTime(m * kMsPerMinute) << " shard " << shard << ": " << error.ToString();
      }
    }
    for (const JobAction& a : actions) {
      for (const CalendarFire& f : NextCalendarJobFires(SystemTimeZones(), a.spec, cfg.tick_ms,
                                                        SlotMs(first, 0, cfg.tick_ms) - 1, 1000)) {
        if (f.utc_minute > last) break;
        want.emplace(a.id, SlotMs(f.utc_minute, a.spec.shard, cfg.tick_ms));
      }
    }
  }
  // Hand-checked instants (local wall time in brackets).
  auto slot = [&](const char* id, const char* iso) {
    return std::make_pair(std::string(id), SlotMs(MinuteAt(iso), ShardForId(id, 120), 500));
  };
  const Fired hand = {
      slot("dst-ny-0230", "2026-03-08T07:00:00Z"),         // [03:00 EDT] moved from 02:30
      slot("dst-ny-merged", "2026-03-08T07:00:00Z"),       // [03:00 EDT] 02:00 and 02:30 merged
      slot("dst-ny-0130", "2026-03-08T06:30:00Z"),         // [01:30 EST]
      slot("dst-ny-0130", "2026-11-01T05:30:00Z"),         // [01:30 EDT], not 06:30Z [01:30 EST]
      slot("dst-ny-0230", "2026-11-01T07:30:00Z"),         // [02:30 EST]
      slot("dst-ny-half-hourly", "2026-11-01T05:30:00Z"),  // [01:30 EDT]
      slot("dst-ny-half-hourly", "2026-11-01T06:30:00Z"),  // [01:30 EST] as well
      slot("dst-lordhowe-0215", "2026-10-03T15:30:00Z"),   // [02:30 +11] moved from 02:15
      slot("dst-lordhowe-0145", "2026-04-04T14:45:00Z"),   // [01:45 +11], not 15:15Z [01:45 +10:30]
  };
  for (const auto& h : hand) EXPECT_TRUE(want.count(h)) << h.first << " @ " << FormatIsoTime(h.second);
  EXPECT_FALSE(want.count(slot("dst-ny-0130", "2026-11-01T06:30:00Z")));
  EXPECT_FALSE(want.count(slot("dst-lordhowe-0145", "2026-04-04T15:15:00Z")));

  ASSERT_TRUE(WaitFor([&] { return triggers.size() >= want.size(); }, 30'000))
      << triggers.size() << " of " << want.size();
  // Every FireUpTo above returned kFired, and a firing records its minutes only once its triggers
  // are acknowledged: the topic's end now bounds all that was fired, any extra included.
  ASSERT_TRUE(triggers.WaitForEndOf(world->trigger_topic, 30'000));
  std::string problems;
  const Fired got = TriggersOf(triggers.records(), "dst-", &problems);
  EXPECT_EQ(problems, "");  // no duplicates (and none "early": these slots are in the past)
  EXPECT_EQ(Describe(want, got), "");
  EXPECT_EQ(want.size(), got.size());
}

}  // namespace
}  // namespace belfry
