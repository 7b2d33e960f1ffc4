#include "core/resource_views.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/base64url.h"
#include "core/execution_report.h"
#include "core/iso_time.h"
#include "core/job_json.h"
#include "core/layout_next_fires.h"
#include "core/shard_lag.h"
#include "core/slot_math.h"
#include "fakes/fake_time_zone_database.h"

namespace belfry {
namespace {

using Json = nlohmann::ordered_json;

const EpochMs kNow = *ParseIsoTime("2026-11-22T13:37:10.250Z");

StoredJob Job(const std::string& id) {
  StoredJob j;
  j.spec.id = id;
  j.spec.topic = "t";
  j.spec.interval_minutes = 5;
  j.spec.details_json = "{}";
  return j;
}

// GET /v1/shards as the admin server built it before the view moved to core (nlohmann, field by
// field): the view must keep its bytes.
std::string FormerShardsBody(const std::vector<ShardState>& states, const ShardLayout& layout, EpochMs now) {
  auto iso_or_null = [](const std::optional<EpochMs>& ms) { return ms ? Json(FormatIsoTime(*ms)) : Json(nullptr); };
  auto string_or_null = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  Json shards = Json::array();
  for (const ShardState& s : states) {
    const ShardLag lag = ComputeShardLag(s, now, layout);
    shards.push_back(Json{
        {"shard", s.shard},
        {"fired_through", s.fired_through ? Json(FormatIsoTime(*s.fired_through * kMsPerMinute)) : Json(nullptr)},
        {"fired_through_minute", s.fired_through ? Json(*s.fired_through) : Json(nullptr)},
        {"claim_node", string_or_null(s.claim_node)},
        {"claim_until", iso_or_null(s.claim_until)},
        {"claim_live", s.claim_live},
        {"behind_minutes", lag.behind_minutes ? Json(*lag.behind_minutes) : Json(nullptr)},
        {"lag_seconds", lag.lag_seconds ? Json(*lag.lag_seconds) : Json(nullptr)},
        {"debt_minutes", s.debt_minutes},
        {"debt_first_minute", s.debt_first ? Json(*s.debt_first) : Json(nullptr)},
        {"debt_node", string_or_null(s.debt_node)},
        {"debt_live", s.debt_live},
    });
  }
  return Json{{"now", FormatIsoTime(now)}, {"shards", std::move(shards)}}.dump();
}

TEST(ResourceViewsTest, ShardsViewKeepsTheApiBytes) {
  const int64_t minute = EpochMinuteOf(kNow);
  std::vector<ShardState> states(120);
  for (int32_t i = 0; i < 120; ++i) {
    states[i].shard = i;
    if (i % 7 != 3) states[i].fired_through = minute - (i % 11);  // some never fired
  }
  states[1].claim_node = "node-b";
  states[1].claim_until = kNow + 3000;
  states[1].claim_live = true;
  states[5].debt_minutes = 4;
  states[5].debt_first = minute - 9;
  states[5].debt_node = "node-c";
  states[5].debt_live = true;
  const ShardLayout layout;
  const std::string view = EncodeShardsView(states, layout, kNow);
  EXPECT_EQ(view, FormerShardsBody(states, layout, kNow));
  const Json j = Json::parse(view);
  EXPECT_EQ(j["shards"][0]["lag_seconds"], 0.0);
  EXPECT_EQ(j["shards"][3]["lag_seconds"], nullptr);  // never fired
  EXPECT_NE(view.find("\"lag_seconds\":0.0,"), std::string::npos);
  EXPECT_EQ(EncodeShardsView({}, layout, kNow), R"({"now":"2026-11-22T13:37:10.250Z","shards":[]})");
}

TEST(ResourceViewsTest, JobPageCarriesTheNextPositionAsACursorAndEachJobsNextTrigger) {
  JobPage page;
  page.jobs = {Job("a"), Job("b")};
  page.jobs[1].paused = true;
  page.next_after_id = "b";
  const ShardLayout layout;
  const FakeTimeZoneDatabase zones;  // interval jobs: no zone is asked for
  const Json j = Json::parse(EncodeJobPage(zones, page, layout, kNow));
  ASSERT_EQ(j["jobs"].size(), 2u);
  // Each item is the job's own JSON and the next trigger its detail view gives.
  Json item = j["jobs"][0];
  const std::vector<NextFire> next = LayoutNextFires(zones, page.jobs[0].spec, false, layout, kNow, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(item["nextTriggerAt"], FormatIsoTime(next.front().at));
  EXPECT_GT(next.front().at, kNow);
  item.erase("nextTriggerAt");
  EXPECT_EQ(item.dump(), Json::parse(EncodeJobJson(page.jobs[0])).dump());
  EXPECT_EQ(j["jobs"][1]["nextTriggerAt"], nullptr);  // paused
  EXPECT_EQ(j["next_cursor"], Base64UrlEncode("b"));
  page.next_after_id.clear();
  EXPECT_EQ(Json::parse(EncodeJobPage(zones, page, layout, kNow))["next_cursor"], nullptr);
  EXPECT_EQ(EncodeJobPage(zones, JobPage{}, layout, kNow), R"({"jobs":[],"next_cursor":null})");
}

TEST(ResourceViewsTest, ExecutionPageNamesTheJobAndEncodesItsCursor) {
  ExecutionPage page;
  ExecutionRecord r;
  r.report.job_id = "j\"1";
  r.report.scheduled_for_ms = kNow;
  page.records = {r};
  page.next_cursor = "1795871452500.0.failed";
  const std::string view = EncodeExecutionPage("j\"1", page);
  EXPECT_EQ(view, "{\"id\":\"j\\\"1\",\"executions\":[" + EncodeExecutionRecord(r) + "],\"next_cursor\":\"" +
                      Base64UrlEncode(page.next_cursor) + "\"}");
  EXPECT_EQ(EncodeExecutionPage("x", ExecutionPage{}), R"({"id":"x","executions":[],"next_cursor":null})");
}

TEST(ResourceViewsTest, NextFiresViewAddsTheCalendarOfACronJob) {
  StoredJob job = Job("n");
  job.paused = false;
  std::vector<NextFire> fires(2);
  fires[0].at = kNow;
  fires[0].local = "2026-11-22T13:37:10Z";
  fires[1].at = kNow + 300'000;
  fires[1].local = "2026-11-22T13:42:10Z";
  fires[1].mark = CalendarFire::Mark::kRepeated;
  EXPECT_EQ(EncodeNextFiresView(job, fires),
            R"({"id":"n","paused":false,"next":["2026-11-22T13:37:10.250Z","2026-11-22T13:42:10.250Z"],"fires":)" +
                EncodeNextFires(fires) + "}");
  job.spec.calendar = CalendarSpec{"0 9 * * *", "Europe/Berlin"};
  job.paused = true;
  const Json j = Json::parse(EncodeNextFiresView(job, {}));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "paused", "next", "fires", "cron", "timeZone"}));
  EXPECT_EQ(j["paused"], true);
  EXPECT_EQ(j["cron"], "0 9 * * *");
  EXPECT_EQ(j["timeZone"], "Europe/Berlin");
}

TEST(ResourceViewsTest, JobDetailViewShowsThreeNextFiresAndTheStatsGiven) {
  const FakeTimeZoneDatabase kNoZones;  // an interval job: no zone is asked for
  JobAndStats job;
  job.job = Job("d");
  job.job.spec.shard = 7;
  JobStats stats;
  stats.job_id = "d";
  stats.consecutive_failures = 2;
  const Json j = Json::parse(EncodeJobDetailView(kNoZones, job, stats, ShardLayout{}, kNow));
  EXPECT_EQ(j["id"], "d");
  ASSERT_EQ(j["nextFires"].size(), 3u);
  EXPECT_EQ(j["nextTriggerAt"], j["nextFires"][0]["at"]);
  EXPECT_EQ(j["consecutiveFailures"], 2);
  EXPECT_EQ(Json::parse(EncodeJobDetailView(kNoZones, job, std::nullopt, ShardLayout{}, kNow))["consecutiveFailures"], 0);
  job.job.paused = true;
  EXPECT_EQ(Json::parse(EncodeJobDetailView(kNoZones, job, stats, ShardLayout{}, kNow))["nextFires"].size(), 0u);
}

TEST(ResourceViewsTest, BackfillCountAndBulkOpList) {
  ManualFireResult counted;
  counted.slots = 96;
  counted.covered = 4;
  EXPECT_EQ(EncodeBackfillCountView("b", kNow, kNow + 60'000, counted),
            R"({"id":"b","from":"2026-11-22T13:37:10.250Z","to":"2026-11-22T13:38:10.250Z","slots":96,"covered":4})");
  EXPECT_EQ(EncodeBulkOpList({}), R"({"bulkOps":[]})");
}

}  // namespace
}  // namespace belfry
