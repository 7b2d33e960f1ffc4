// One-shot jobs and priority end to end on the real servers (issue 7): commands over Kafka, the
// real `belfry serve`, triggers read back from Kafka.
//
// Why it takes minutes of real time: a one-shot fires at its real slot and must not fire again in
// the minutes after it (across a restart), and a limited job must stop after its count of real
// slots. The planning rules are unit-tested over the FakeClock (core_test: OneShot, FireLimit);
// each test runs as its own ctest entry (SPLIT_TESTS), so their minutes overlap.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "belfry_process.h"
#include "core/iso_time.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "itest_support.h"
#include "plain_producer.h"

namespace belfry {
namespace {

class OneShotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    world_ = ItestWorld::Create("once").release();
    ASSERT_NE(world_, nullptr);
    producer_ = new PlainProducer(world_->brokers);
    triggers_ = new TopicCollector(world_->brokers, {world_->trigger_topic});
    server_ = new BelfryProcess(world_->Env(), "/tmp/belfry-" + world_->run_id + ".log");
    ASSERT_TRUE(server_->WaitForLog("belfry serving", 30'000)) << server_->Log();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete triggers_;
    delete producer_;
    delete world_;
  }

  static void Send(const std::string& id, const std::string& value) {
    auto [p, o] = producer_->Send(world_->commands_topic, id, value);
    EXPECT_GE(o, 0) << "publishing " << id;
  }
  static std::string OneShot(const std::string& id, EpochMs run_at, int priority = 0) {
    std::string v = R"({"id":")";
    v += id;
    v += R"(","executionInterval":"ONCE","runAt":")";
    v += FormatIsoTime(run_at);
    v += R"(","topic":")";
    v += world_->trigger_topic;
    v += R"(","key":"same-partition","priority":)";
    v += std::to_string(priority);
    v += "}";
    return v;
  }
  static std::string Interval(const std::string& id, int priority) {
    std::string v = R"({"id":")";
    v += id;
    v += R"(","intervalMinutes":1,"topic":")";
    v += world_->trigger_topic;
    v += R"(","key":"same-partition","priority":)";
    v += std::to_string(priority);
    v += "}";
    return v;
  }
  static int64_t Count(const std::string& where) {
    std::string sql = "SELECT count(*) FROM jobs WHERE ";
    sql += where;
    return world_->db->Exec(sql)[0][0].as<int64_t>();
  }
  // Triggers received for `id`, in arrival order.
  static std::vector<TailRecord> ReceivedFor(const std::string& id) {
    std::vector<TailRecord> out;
    for (const TailRecord& r : triggers_->records()) {
      auto jid = r.headers.find("belfry-job-id");
      if (jid != r.headers.end() && jid->second == id) out.push_back(r);
    }
    return out;
  }
  // A shard whose slot comes `ahead_ms` from now, and the first minute whose slot is >= 10 s away.
  static std::pair<int32_t, int64_t> ShardAhead(int64_t ahead_ms) {
    const int64_t now = WallMs();
    const int32_t shard = static_cast<int32_t>(((now + ahead_ms) % 60'000) / 500);
    int64_t m = LastSlotMinuteAtOrBefore(now, shard, 500) + 1;
    if (SlotMs(m, shard, 500) < now + 10'000) ++m;
    return {shard, m};
  }

  static ItestWorld* world_;
  static PlainProducer* producer_;
  static TopicCollector* triggers_;
  static BelfryProcess* server_;
};

ItestWorld* OneShotTest::world_ = nullptr;
PlainProducer* OneShotTest::producer_ = nullptr;
TopicCollector* OneShotTest::triggers_ = nullptr;
BelfryProcess* OneShotTest::server_ = nullptr;

// A one-shot fires once, at its minute and its shard's second, in priority order with the
// interval jobs of that shard-minute, and never again: not in later minutes, not after a restart.
TEST_F(OneShotTest, FiresOnceAtItsSlotInPriorityOrderAndNeverAgainAcrossARestart) {
  const auto [shard, m0] = ShardAhead(20'000);
  const auto ids = IdsInShard(world_->run_id + "-o", shard, 4);
  const std::string &once = ids[0], &hi = ids[1], &lo = ids[2], &mid = ids[3];
  const EpochMs s0 = SlotMs(m0, shard, 500);
  // runAt 59 s into minute m0: the trigger still fires at the shard's second of m0.
  Send(once, OneShot(once, m0 * 60'000 + 59'000, 10));
  Send(hi, Interval(hi, 100));
  Send(lo, Interval(lo, -5));
  Send(mid, Interval(mid, 0));
  ASSERT_TRUE(WaitFor([&] { return Count("id LIKE '" + world_->run_id + "-o-%'") == 4; }, 10'000));
  ASSERT_EQ(Count("id = '" + once + "' AND run_minute = " + std::to_string(m0)), 1);
  ASSERT_LT(WallMs(), s0 - 1000) << "set-up too slow for the chosen slot";

  SleepUntilWallMs(s0 + 8000);
  const std::vector<TailRecord> got = ReceivedFor(once);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].headers.at("belfry-scheduled-for"), std::to_string(s0));
  EXPECT_GE(got[0].timestamp_ms, s0 - 50);
  EXPECT_LT(got[0].timestamp_ms, s0 + 5000);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(*got[0].value).get(doc), simdjson::SUCCESS);
  std::string_view scheduled;
  ASSERT_EQ(doc["scheduledFor"].get(scheduled), simdjson::SUCCESS);
  EXPECT_EQ(std::string(scheduled), FormatIsoTime(s0));
  int64_t interval = -1;
  ASSERT_EQ(doc["intervalMinutes"].get(interval), simdjson::SUCCESS);
  EXPECT_EQ(interval, 0);

  // Priority: one key, so one partition; arrival order is emission order.
  std::vector<std::string> order;
  for (const TailRecord& r : triggers_->records()) {
    if (r.headers.count("belfry-scheduled-for") &&
        r.headers.at("belfry-scheduled-for") == std::to_string(s0)) {
      order.push_back(r.headers.at("belfry-job-id"));
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{hi, once, mid, lo}));

  // Restart the node, then let the next minute pass: the one-shot does not fire again.
  int64_t took = 0;
  EXPECT_EQ(server_->Terminate(12'000, &took), 0) << server_->Log();
  delete server_;
  server_ = new BelfryProcess(world_->Env(), "/tmp/belfry-" + world_->run_id + "-restart.log");
  ASSERT_TRUE(server_->WaitForLog("belfry serving", 30'000)) << server_->Log();
  SleepUntilWallMs(SlotMs(m0 + 1, shard, 500) + 8000);
  EXPECT_EQ(ReceivedFor(once).size(), 1u);
  EXPECT_EQ(ReceivedFor(mid).size(), 2u);      // the interval job did fire again
  EXPECT_EQ(Count("id = '" + once + "'"), 1);  // kept until the retention sweep
}

// A runAt already past when the command is applied but within max_catchup (15 min) fires at
// once, at its shard's next slot, with its original scheduledFor; one beyond the window never fires.
TEST_F(OneShotTest, PastRunAtWithinTheWindowFiresAtOnceAndBeyondItNever) {
  const auto [shard, m0] = ShardAhead(15'000);
  const auto ids = IdsInShard(world_->run_id + "-past", shard, 2);
  const std::string &within = ids[0], &beyond = ids[1];
  const EpochMs sent_at = WallMs();
  const EpochMs within_run_at = sent_at - 5 * 60'000;
  const EpochMs beyond_run_at = sent_at - 30 * 60'000;
  Send(within, OneShot(within, within_run_at));
  Send(beyond, OneShot(beyond, beyond_run_at));
  ASSERT_TRUE(WaitFor([&] { return Count("id LIKE '" + world_->run_id + "-past-%'") == 2; }, 10'000));
  ASSERT_TRUE(WaitFor([&] { return !ReceivedFor(within).empty(); }, 75'000)) << "the past runAt never fired";
  const TailRecord r = ReceivedFor(within)[0];
  EXPECT_EQ(r.headers.at("belfry-scheduled-for"),
            std::to_string(SlotMs(EpochMinuteOf(within_run_at), shard, 500)));
  EXPECT_GE(r.timestamp_ms, sent_at);
  EXPECT_LT(r.timestamp_ms, sent_at + 65'000);  // at the shard's next slot, not at the runAt's
  (void)m0;
  SleepUntilWallMs(WallMs() + 3000);
  EXPECT_EQ(ReceivedFor(within).size(), 1u);
  EXPECT_TRUE(ReceivedFor(beyond).empty());
}

// Issue 18 (docs/manual-fires.md): `trigger` fires a job once, now, and `backfill` fires its past
// slots with their own scheduledFor, both marked manual; a repeated backfill fires nothing more,
// and its outcome says why.
TEST_F(OneShotTest, TriggerAndBackfillFireByHandMarkedManual) {
  TopicCollector results(world_->brokers, {world_->results_topic});
  const int64_t now_minute = EpochMinuteOf(WallMs());
  const int32_t offset = static_cast<int32_t>((now_minute + 30) % 60);  // its own slots are half an hour away
  const std::string job = world_->run_id + "-manual";
  const int32_t shard = ShardForId(job, 120);
  Send(job, R"({"id":")" + job + R"(","intervalMinutes":60,"offsetMinutes":)" + std::to_string(offset) +
                R"(,"topic":")" + world_->trigger_topic + R"("})");
  ASSERT_TRUE(WaitFor([&] { return Count("id = '" + job + "'") == 1; }, 10'000));

  // The job's slots in the last three hours, by brute force.
  const int64_t from_minute = now_minute - 180;
  std::vector<std::string> expected;
  for (int64_t m = from_minute; m < now_minute; ++m) {
    if (m % 60 == offset) expected.push_back(std::to_string(SlotMs(m, shard, 500)));
  }
  ASSERT_EQ(expected.size(), 3u);
  const std::string backfill = R"({"op":"backfill","id":")" + job + R"(","from":")" + FormatIsoTime(from_minute * 60'000) +
                               R"(","to":")" + FormatIsoTime(now_minute * 60'000) + R"(","ratePerMinute":100)";
  const EpochMs sent_at = WallMs();
  Send(job, R"({"op":"trigger","id":")" + job + R"("})");
  Send(job, backfill + "}");
  ASSERT_TRUE(WaitFor([&] { return ReceivedFor(job).size() >= 4; }, 75'000))
      << "received " << ReceivedFor(job).size() << " of 1 trigger and 3 backfilled slots";
  std::vector<std::string> backfilled;
  int triggered = 0;
  for (const TailRecord& r : ReceivedFor(job)) {
    ASSERT_TRUE(r.headers.count("belfry-manual")) << *r.value;
    const std::string& kind = r.headers.at("belfry-manual");
    EXPECT_NE(r.value->find(R"("manual":")" + kind + R"(")"), std::string::npos) << *r.value;
    EXPECT_GE(r.timestamp_ms, sent_at + 1000) << "fired before the margin after the command";
    if (kind == "backfill") {
      backfilled.push_back(r.headers.at("belfry-scheduled-for"));
    } else {
      EXPECT_EQ(kind, "trigger");
      ++triggered;
      const int64_t scheduled = std::stoll(r.headers.at("belfry-scheduled-for"));
      EXPECT_GE(scheduled, sent_at - 5'000) << "a trigger's scheduledFor is its command's timestamp";
      EXPECT_LE(scheduled, sent_at + 5'000);
    }
  }
  std::sort(backfilled.begin(), backfilled.end());
  EXPECT_EQ(backfilled, expected);
  EXPECT_EQ(triggered, 1);

  // The same backfill again, and as a dry run: nothing new, and the outcomes say so.
  Send(job, backfill + "}");
  Send(job, backfill + R"(,"dryRun":true})");
  std::vector<std::string> outcomes;
  ASSERT_TRUE(WaitFor(
      [&] {
        outcomes.clear();
        for (const TailRecord& r : results.records()) {
          if (r.key == job && r.value && r.value->find(R"("op":"backfill")") != std::string::npos) {
            outcomes.push_back(*r.value);
          }
        }
        return outcomes.size() >= 3;
      },
      15'000));
  EXPECT_NE(outcomes[0].find(R"("status":"applied","error":null,"slots":3,"covered":0,"dryRun":false)"),
            std::string::npos)
      << outcomes[0];
  EXPECT_NE(outcomes[1].find(R"("slots":0,"covered":3,"dryRun":false)"), std::string::npos) << outcomes[1];
  EXPECT_NE(outcomes[2].find(R"("slots":0,"covered":3,"dryRun":true)"), std::string::npos) << outcomes[2];
  EXPECT_EQ(Count("retry_of = '" + job + "'"), 4);

  // A trigger of a job that does not exist is rejected in its outcome (and not fired).
  Send(job + "-none", R"({"op":"trigger","id":")" + job + R"(-none"})");
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const TailRecord& r : results.records()) {
          if (r.key == job + "-none") {
            return r.value && r.value->find(R"("status":"rejected","error":"not_found: )") != std::string::npos;
          }
        }
        return false;
      },
      15'000));
}

// Bulk operations (docs/bulk-operations.md): a bulk trigger over labels fires every matching job
// once, marked manual, and none other; a bulk delete over a label removes them all, and each
// outcome, published when its walk has finished, counts them.
// Each change of the six jobs is also published, in order, to the changes topic (the audit trail,
// docs/audit-trail.md): its upsert (whose actor comes from a header), the bulk trigger of four of
// them, and the bulk delete.
TEST_F(OneShotTest, BulkTriggerFiresTheMatchingJobsAndBulkDeleteRemovesThem) {
  TopicCollector results(world_->brokers, {world_->results_topic});
  TopicCollector changes(world_->brokers, {world_->changes_topic});
  const int64_t now_minute = EpochMinuteOf(WallMs());
  const int32_t offset = static_cast<int32_t>((now_minute + 30) % 60);  // no scheduled slot for half an hour
  const std::string batch = world_->run_id + "-bulk";
  std::vector<std::string> jobs;
  for (int i = 0; i < 6; ++i) {
    const std::string id = batch + "-" + std::to_string(i);
    jobs.push_back(id);
    const auto [p, o] = producer_->Send(
        world_->commands_topic, id,
        R"({"id":")" + id + R"(","intervalMinutes":60,"offsetMinutes":)" + std::to_string(offset) +
            R"(,"topic":")" + world_->trigger_topic + R"(","labels":{"batch":")" + batch + R"(","wave":")" +
            (i < 4 ? "1" : "2") + R"("}})",
        {{"belfry-actor", "deploy-bot"}});
    ASSERT_GE(o, 0) << "publishing " << id;
  }
  ASSERT_TRUE(WaitFor([&] { return Count("labels @> '{\"batch\":\"" + batch + "\"}'") == 6; }, 10'000));

  const EpochMs sent_at = WallMs();
  const std::string trigger_id = batch + "-poke";
  Send(trigger_id, R"({"op":"trigger","id":")" + trigger_id + R"(","selector":{"labels":{"batch":")" + batch +
                       R"(","wave":"1"}},"actor":"itest"})");
  ASSERT_TRUE(WaitFor(
      [&] {
        size_t n = 0;
        for (const std::string& id : jobs) n += ReceivedFor(id).size();
        return n >= 4;
      },
      75'000));
  for (int i = 0; i < 6; ++i) {
    const std::vector<TailRecord> got = ReceivedFor(jobs[static_cast<size_t>(i)]);
    ASSERT_EQ(got.size(), i < 4 ? 1u : 0u) << jobs[static_cast<size_t>(i)];
    if (got.empty()) continue;
    EXPECT_EQ(got[0].headers.at("belfry-manual"), "trigger");
    EXPECT_GE(std::stoll(got[0].headers.at("belfry-scheduled-for")), sent_at - 5'000);
  }

  const std::string delete_id = batch + "-drop";
  Send(delete_id, R"({"op":"delete","id":")" + delete_id + R"(","selector":{"labels":{"batch":")" + batch + R"("}}})");
  std::string trigger_outcome, delete_outcome;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const TailRecord& r : results.records()) {
          if (r.key == trigger_id && r.value) trigger_outcome = *r.value;
          if (r.key == delete_id && r.value) delete_outcome = *r.value;
        }
        return !trigger_outcome.empty() && !delete_outcome.empty();
      },
      30'000));
  EXPECT_NE(trigger_outcome.find(R"("op":"trigger","status":"applied","error":null,"selector":{"labels":{"batch":")" +
                                 batch + R"(","wave":"1"}},"matched":4,"changed":4,"dryRun":false)"),
            std::string::npos)
      << trigger_outcome;
  EXPECT_NE(delete_outcome.find(R"("op":"delete","status":"applied","error":null,"selector":{"labels":{"batch":")" +
                                batch + R"("}},"matched":6,"changed":6,"dryRun":false)"),
            std::string::npos)
      << delete_outcome;
  EXPECT_EQ(Count("id LIKE '" + batch + "-%'"), 0) << "the jobs and their manual rows are gone";
  EXPECT_EQ(world_->db->Exec("SELECT count(*) FROM bulk_ops WHERE published_at IS NOT NULL AND id IN ('" +
                             trigger_id + "', '" + delete_id + "')")[0][0]
                .as<int64_t>(),
            2);

  // This test's jobs' events (the suite's other tests share the topic), by job, in topic order;
  // complete once every job's delete has arrived.
  std::map<std::string, std::vector<nlohmann::json>> events;
  ASSERT_TRUE(WaitFor(
      [&] {
        events.clear();
        for (const TailRecord& r : changes.records()) {
          if (!r.key || !r.value || std::find(jobs.begin(), jobs.end(), *r.key) == jobs.end()) continue;
          nlohmann::json e = nlohmann::json::parse(*r.value);
          std::vector<nlohmann::json>& of_job = events[*r.key];
          // At least once: a republished round repeats events, which a consumer drops by changeId.
          const bool repeat = std::any_of(of_job.begin(), of_job.end(),
                                          [&](const nlohmann::json& x) { return x["changeId"] == e["changeId"]; });
          if (!repeat) of_job.push_back(std::move(e));
        }
        return std::all_of(jobs.begin(), jobs.end(), [&](const std::string& id) {
          return !events[id].empty() && events[id].back()["op"] == "delete";
        });
      },
      30'000))
      << "change events: " << changes.records().size();
  for (int i = 0; i < 6; ++i) {
    const std::string& id = jobs[static_cast<size_t>(i)];
    const std::vector<nlohmann::json>& e = events[id];
    std::vector<std::string> ops;
    for (const nlohmann::json& x : e) ops.push_back(x["op"]);
    EXPECT_EQ(ops, i < 4 ? (std::vector<std::string>{"upsert", "trigger", "delete"})
                         : (std::vector<std::string>{"upsert", "delete"}))
        << id;
    if (e.size() < 2) continue;
    EXPECT_EQ(e.front()["version"], 1);
    EXPECT_EQ(e.front()["jobId"], id);
    EXPECT_EQ(e.front()["actor"], "deploy-bot") << "from the belfry-actor header";
    EXPECT_TRUE(e.front()["before"].is_null());
    EXPECT_EQ(e.front()["after"]["labels"]["batch"], batch);
    EXPECT_EQ(e.back()["bulkId"], delete_id);
    EXPECT_TRUE(e.back()["after"].is_null());
    EXPECT_EQ(e.back()["before"]["id"], id);
    if (i < 4) {
      EXPECT_EQ(e[1]["bulkId"], trigger_id);
      EXPECT_EQ(e[1]["actor"], "itest");
      EXPECT_EQ(e[1]["detail"]["slots"], 1);
    }
    for (size_t k = 1; k < e.size(); ++k) EXPECT_GT(e[k]["changeId"], e[k - 1]["changeId"]) << id;
  }
}

// Limited runs (docs/fire-limits.md): a job with maxFires 1 every minute fires once, at its first
// slot after the command, and not at its next one a minute later, though it stays stored.
TEST_F(OneShotTest, ALimitedJobFiresItsCountThenStops) {
  // An id whose shard's slot is 10-20 s ahead: its first slot comes soon, its second a minute on.
  const auto [shard, minute] = ShardAhead(15'000);
  std::string job;
  for (int k = 0; job.empty() || ShardForId(job, 120) != shard; ++k) job = world_->run_id + "-limited-" + std::to_string(k);
  Send(job, R"({"id":")" + job + R"(","intervalMinutes":1,"maxFires":1,"topic":")" + world_->trigger_topic + R"("})");
  ASSERT_TRUE(WaitFor([&] { return Count("id = '" + job + "' AND max_fires = 1") == 1; }, 10'000));
  const EpochMs first = SlotMs(minute, shard, 500);
  ASSERT_TRUE(WaitFor([&] { return !ReceivedFor(job).empty(); }, first - WallMs() + 10'000))
      << "the first slot did not fire";
  EXPECT_EQ(ReceivedFor(job).front().headers.at("belfry-scheduled-for"), std::to_string(first));
  // Past the firing of the second slot's minute: the shard's watermark has reached it and it is
  // not owed as debt (every minute up to fired_through and outside the debt was fired, its
  // triggers acknowledged), and the collector holds everything the topic had by then.
  const EpochMs second = SlotMs(minute + 1, shard, 500);
  const std::string m = std::to_string(minute + 1);
  ASSERT_TRUE(WaitFor(
      [&] {
        return world_->db->Exec("SELECT count(*) FROM shard_state WHERE shard = " + std::to_string(shard) +
                                " AND fired_through >= " + m + " AND NOT debt @> " + m + "::bigint")[0][0]
                   .as<int64_t>() == 1;
      },
      second - WallMs() + 30'000))
      << "the second slot's minute was not fired";
  ASSERT_TRUE(triggers_->WaitForEndOf(world_->trigger_topic, 30'000));
  EXPECT_EQ(ReceivedFor(job).size(), 1u) << "a job limited to one fire fired again";
  EXPECT_EQ(Count("id = '" + job + "'"), 1) << "a limited job stays stored, ended";
}

}  // namespace
}  // namespace belfry
