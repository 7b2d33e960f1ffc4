// Execution outcomes end to end (issue 7): reports over Kafka into the real `belfry serve`,
// history and counters read back through HTTP and the CLI, hostile reports in the DLQ.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "belfry_process.h"
#include "core/iso_time.h"
#include "itest_support.h"
#include "plain_producer.h"

namespace belfry {
namespace {

using Json = nlohmann::json;

class ExecutionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    world_ = ItestWorld::Create("exec").release();
    ASSERT_NE(world_, nullptr);
    env_ = world_->Env();
    executions_topic_ = "it.executions." + world_->run_id;
    executions_dlq_ = "it.executions.dlq." + world_->run_id;
    env_["BELFRY_KAFKA_EXECUTIONS_TOPIC"] = executions_topic_;
    env_["BELFRY_KAFKA_EXECUTIONS_DLQ_TOPIC"] = executions_dlq_;
    env_["BELFRY_KAFKA_EXECUTIONS_GROUP_ID"] = "it-exec-" + world_->run_id;
    std::string out;
    ASSERT_EQ(RunBelfry({"migrate"}, env_, &out), 0) << out;  // creates this run's executions topics
    producer_ = new PlainProducer(world_->brokers);
    dlq_ = new TopicCollector(world_->brokers, {executions_dlq_});
    server_ = new BelfryProcess(env_, "/tmp/belfry-" + world_->run_id + ".log");
    ASSERT_TRUE(server_->WaitForLog("belfry serving", 30'000)) << server_->Log();
    port_ = server_->AdminPort();
    ASSERT_GT(port_, 0);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dlq_;
    delete producer_;
    delete world_;
  }

  static int64_t SendReport(const std::string& key, const std::optional<std::string>& value) {
    auto [p, o] = producer_->Send(executions_topic_, key, value);
    EXPECT_GE(o, 0);
    return o;
  }
  static std::string Report(const std::string& id, EpochMs sf, const std::string& status, int attempt = 0) {
    Json v = {{"jobId", id},
              {"scheduledFor", FormatIsoTime(sf)},
              {"status", status},
              {"error", status == "failed" ? Json("HTTP 503 from carrier") : Json(nullptr)},
              {"startedAt", FormatIsoTime(sf + 100)},
              {"finishedAt", FormatIsoTime(sf + 900)},
              {"worker", "poller-7"},
              {"attempt", attempt}};
    return v.dump();
  }
  static int64_t Stored(const std::string& id) {
    std::string sql = "SELECT count(*) FROM executions WHERE job_id = '";
    sql += id;  // run ids are [a-z0-9-]
    sql += "'";
    return world_->db->Exec(sql)[0][0].as<int64_t>();
  }
  static httplib::Result Get(const std::string& path) {
    httplib::Client c("127.0.0.1", port_);
    return c.Get(path.c_str());
  }

  static ItestWorld* world_;
  static std::map<std::string, std::string> env_;
  static std::string executions_topic_, executions_dlq_;
  static PlainProducer* producer_;
  static TopicCollector* dlq_;
  static BelfryProcess* server_;
  static int port_;
};

ItestWorld* ExecutionsTest::world_ = nullptr;
std::map<std::string, std::string> ExecutionsTest::env_;
std::string ExecutionsTest::executions_topic_, ExecutionsTest::executions_dlq_;
PlainProducer* ExecutionsTest::producer_ = nullptr;
TopicCollector* ExecutionsTest::dlq_ = nullptr;
BelfryProcess* ExecutionsTest::server_ = nullptr;
int ExecutionsTest::port_ = 0;

constexpr EpochMs kBase = 1'795'352'432'500;  // 2026-11-22T13:00:32.500Z

TEST_F(ExecutionsTest, HistoryCountersAndPaginationThroughHttpAndCli) {
  const std::string id = world_->run_id + "-hist";
  auto [cp, co] = producer_->Send(
      world_->commands_topic, id,
      R"({"id":")" + id + R"(","intervalMinutes":60,"topic":")" + world_->trigger_topic + "\"}");
  ASSERT_GE(co, 0);
  // 25 runs: runs 4, 9, 14 and 19 succeeded, the rest failed, so the last five failed in a row.
  // Duplicates of the newest report are stored and counted once.
  for (int i = 0; i < 25; ++i) {
    SendReport(id, Report(id, kBase + i * 60'000, i % 5 == 4 && i < 20 ? "succeeded" : "failed"));
  }
  for (int i = 0; i < 3; ++i) SendReport(id, Report(id, kBase + 24 * 60'000, "failed"));
  SendReport(id, Report(id, kBase + 24 * 60'000, "running"));
  ASSERT_TRUE(WaitFor([&] { return Stored(id) == 26; }, 30'000)) << Stored(id) << "\n" << server_->Log();

  auto r = Get("/v1/jobs/" + id);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json job = Json::parse(r->body);
  EXPECT_EQ(job["lastOutcome"]["status"], "failed");
  EXPECT_EQ(job["lastOutcome"]["scheduledFor"], FormatIsoTime(kBase + 24 * 60'000));
  EXPECT_EQ(job["lastOutcome"]["error"], "HTTP 503 from carrier");
  EXPECT_EQ(job["consecutiveFailures"], 5);
  EXPECT_EQ(job["totalFailed"], 21);
  EXPECT_EQ(job["totalSucceeded"], 4);
  EXPECT_TRUE(job["nextTriggerAt"].is_string());

  // Pages of 10, newest first, until next_cursor is null.
  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  for (;;) {
    auto page = Get("/v1/jobs/" + id + "/executions?limit=10" + (cursor.empty() ? "" : "&cursor=" + cursor));
    ASSERT_TRUE(page);
    ASSERT_EQ(page->status, 200) << page->body;
    Json body = Json::parse(page->body);
    for (const Json& e : body["executions"]) {
      EXPECT_EQ(e["jobId"], id);
      EXPECT_EQ(e["worker"], "poller-7");
      seen.push_back(e["scheduledFor"].get<std::string>() + "/" + e["status"].get<std::string>());
    }
    ++pages;
    if (body["next_cursor"].is_null() || pages > 5) break;
    cursor = body["next_cursor"].get<std::string>();
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 26u);
  EXPECT_EQ(seen[0], FormatIsoTime(kBase + 24 * 60'000) + "/running");
  EXPECT_EQ(seen[1], FormatIsoTime(kBase + 24 * 60'000) + "/failed");
  EXPECT_EQ(seen.back(), FormatIsoTime(kBase) + "/failed");
  EXPECT_EQ(Get("/v1/jobs/" + id + "/executions?cursor=bm9wZQ")->status, 400);
  EXPECT_EQ(Get("/v1/jobs/" + id + "/executions?limit=0")->status, 400);

  // The CLI.
  std::string out;
  ASSERT_EQ(RunBelfry({"jobs", "history", id, "--limit", "10", "-o", "json"}, env_, &out), 0) << out;
  Json cli = Json::parse(out.substr(out.find('{')));
  EXPECT_EQ(cli["executions"].size(), 10u);
  EXPECT_TRUE(cli["next_cursor"].is_string());
  ASSERT_EQ(RunBelfry({"jobs", "get", id, "--json"}, env_, &out), 0) << out;
  Json got = Json::parse(out.substr(out.find('{')));
  EXPECT_EQ(got["consecutiveFailures"], 5);
  EXPECT_EQ(got["lastOutcome"]["status"], "failed");
  ASSERT_EQ(RunBelfry({"jobs", "get", id}, env_, &out), 0) << out;
  EXPECT_NE(out.find("5 in a row"), std::string::npos) << out;
}

TEST_F(ExecutionsTest, HostileReportsLandInTheDlqAndValidOnesAroundThemAreStored) {
  const std::string id = world_->run_id + "-dlq";
  SendReport(id, Report(id, kBase, "succeeded"));
  const int64_t bad_json = SendReport(id, "{\"jobId\":");
  const int64_t bad_key = SendReport("someone-else", Report(id, kBase, "failed"));
  const int64_t bad_status = SendReport(id, Report(id, kBase, "exploded"));
  const int64_t tombstone = SendReport(id, std::nullopt);
  const int64_t unknown =
      SendReport(id, R"({"jobId":")" + id + R"(","scheduledFor":0,"status":"failed","rm":"-rf"})");
  const int64_t huge = SendReport(id, std::string(100'000, '['));
  SendReport(id, Report(id, kBase + 60'000, "failed"));
  ASSERT_TRUE(WaitFor([&] { return Stored(id) == 2; }, 30'000)) << server_->Log();
  ASSERT_TRUE(WaitFor([&] { return dlq_->size() >= 6; }, 30'000)) << dlq_->size();
  std::map<int64_t, std::string> reason;
  for (const TailRecord& r : dlq_->records()) {
    ASSERT_TRUE(r.headers.count("belfry-error"));
    ASSERT_TRUE(r.headers.count("belfry-source-partition"));
    reason[std::stoll(r.headers.at("belfry-source-offset"))] = r.headers.at("belfry-error");
  }
  EXPECT_EQ(reason[bad_json].rfind("invalid_json", 0), 0u) << reason[bad_json];
  EXPECT_EQ(reason[bad_key].rfind("key_mismatch", 0), 0u) << reason[bad_key];
  EXPECT_EQ(reason[bad_status].rfind("invalid_status", 0), 0u) << reason[bad_status];
  EXPECT_EQ(reason[tombstone].rfind("tombstone", 0), 0u) << reason[tombstone];
  EXPECT_EQ(reason[unknown].rfind("unknown_field", 0), 0u) << reason[unknown];
  EXPECT_EQ(reason[huge].rfind("too_large", 0), 0u) << reason[huge];
  EXPECT_TRUE(server_->running());
}

// Issue 33 §2: a report the store refuses for good (a test-only trigger on `executions` raises
// for one job) goes to the DLQ once with store_error; the reports around it are stored and the
// partition's lag goes back to 0. Before, the batch was retried forever.
TEST_F(ExecutionsTest, AReportTheStoreRefusesGoesToTheDlqOnceAndTheRestIsStored) {
  const std::string poison = world_->run_id + "-refused";
  world_->db->Exec("CREATE FUNCTION refuse_report() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                   "IF NEW.job_id = '" + poison + "' THEN RAISE EXCEPTION 'refusing %', NEW.job_id; END IF; "
                   "RETURN NEW; END $$");
  world_->db->Exec("CREATE TRIGGER refuse_report BEFORE INSERT ON executions FOR EACH ROW "
                   "EXECUTE FUNCTION refuse_report()");
  const int kGood = 30;
  int64_t poison_offset = -1;
  for (int i = 0; i < kGood; ++i) {
    const std::string id = world_->run_id + "-beside-" + std::to_string(i);
    SendReport(id, Report(id, kBase, "succeeded"));
    if (i == kGood / 2) poison_offset = SendReport(poison, Report(poison, kBase, "failed"));
  }
  const auto stored_beside = [&] {
    return CountFresh(world_->db->url(), "SELECT count(*) FROM executions WHERE job_id LIKE '%-beside-%'");
  };
  const bool stored = WaitFor([&] { return stored_beside() == kGood; }, 30'000);
  const bool lag_zero =
      AwaitLagZero(world_->brokers, env_["BELFRY_KAFKA_EXECUTIONS_GROUP_ID"], executions_topic_, 30'000);
  EXPECT_TRUE(stored) << stored_beside() << " of " << kGood;
  EXPECT_TRUE(lag_zero) << "the executions topic's committed offsets never reached its end";
  ASSERT_TRUE(dlq_->WaitForEndOf(executions_dlq_, 20'000));
  int dead = 0;
  for (const TailRecord& r : dlq_->records()) {
    if (r.key != poison) continue;
    ++dead;
    EXPECT_EQ(r.headers.at("belfry-error").rfind("store_error: ", 0), 0u) << r.headers.at("belfry-error");
    EXPECT_NE(r.headers.at("belfry-error").find("refusing " + poison), std::string::npos);
    EXPECT_EQ(r.headers.at("belfry-source-offset"), std::to_string(poison_offset));
  }
  EXPECT_EQ(dead, 1);
  EXPECT_TRUE(server_->running());
}

}  // namespace
}  // namespace belfry
