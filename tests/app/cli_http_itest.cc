// The operator surface on the real servers: the `belfry` CLI round-trips through Kafka and
// PostgreSQL, and the admin HTTP API of a running `belfry serve` answers every route.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "belfry_process.h"
#include "core/iso_time.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "itest_support.h"

namespace belfry {
namespace {

using Json = nlohmann::json;

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class OperatorSurfaceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    world_ = ItestWorld::Create("ops").release();
    ASSERT_NE(world_, nullptr);
    port_ = FreePort();
    env_ = world_->Env();
    env_["BELFRY_ADMIN_LISTEN"] = "127.0.0.1:" + std::to_string(port_);
    env_["BELFRY_ADMIN_TOKEN"] = "s3cret";
    server_ = new BelfryProcess(env_, "/tmp/belfry-" + world_->run_id + ".log");
    ASSERT_TRUE(server_->WaitForLog("belfry serving", 30'000)) << server_->Log();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete world_;
  }

  static int Cli(const std::vector<std::string>& args, std::string* out) { return RunBelfry(args, env_, out); }
  static httplib::Result Get(const std::string& path, bool auth = true) {
    httplib::Client c("127.0.0.1", port_);
    httplib::Headers h;
    if (auth) h.emplace("Authorization", "Bearer s3cret");
    return c.Get(path.c_str(), h);
  }
  static std::string Id(const std::string& name) { return world_->run_id + "-" + name; }

  static ItestWorld* world_;
  static BelfryProcess* server_;
  static std::map<std::string, std::string> env_;
  static int port_;
};

ItestWorld* OperatorSurfaceTest::world_ = nullptr;
BelfryProcess* OperatorSurfaceTest::server_ = nullptr;
std::map<std::string, std::string> OperatorSurfaceTest::env_;
int OperatorSurfaceTest::port_ = 0;

TEST_F(OperatorSurfaceTest, CliPutGetNextDeleteRoundTrip) {
  const std::string id = Id("cli");
  std::string out;
  ASSERT_EQ(Cli({"jobs", "put", "--id", id, "--interval-minutes", "5", "--offset-minutes", "3", "--topic",
                 world_->trigger_topic, "--owner", "ops", "--details", R"({"a":1})"},
                &out),
            0)
      << out;
  EXPECT_NE(out.find("\"status\":\"applied\""), std::string::npos) << out;

  ASSERT_EQ(Cli({"jobs", "get", id, "--json"}, &out), 0) << out;
  const Json job = Json::parse(out);
  EXPECT_EQ(job["id"], id);
  EXPECT_EQ(job["intervalMinutes"], 5);
  EXPECT_EQ(job["offsetMinutes"], 3);
  EXPECT_EQ(job["jobDetails"], Json::parse(R"({"a":1})"));
  EXPECT_EQ(job["shard"], ShardForId(id, 120));

  ASSERT_EQ(Cli({"jobs", "next", id, "-n", "3"}, &out), 0) << out;
  std::istringstream lines(out);
  std::string line;
  std::vector<EpochMs> got;
  while (std::getline(lines, line)) {
    auto t = ParseIsoTime(line.substr(0, line.find(' ')));  // "<UTC>  <local>[  dst:<mark>]"
    ASSERT_TRUE(t) << line;
    got.push_back(*t);
  }
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(EpochMinuteOf(got[i]) % 5, 3);
    EXPECT_EQ(got[i] % 60'000, ShardForId(id, 120) * 500);
    if (i > 0) {
      EXPECT_EQ(got[i] - got[i - 1], 5 * 60'000);
    }
  }

  ASSERT_EQ(Cli({"jobs", "pause", id}, &out), 0) << out;
  ASSERT_EQ(Cli({"jobs", "get", id, "--json"}, &out), 0);
  EXPECT_EQ(Json::parse(out)["paused"], true);

  // Issue 18 (docs/manual-fires.md): a paused job can still be fired by hand, and backfilled.
  ASSERT_EQ(Cli({"jobs", "trigger", id}, &out), 0) << out;
  Json outcome = Json::parse(out);
  EXPECT_EQ(outcome["op"], "trigger");
  EXPECT_EQ(outcome["slots"], 1);
  const std::string from = "2026-01-01T00:00:00Z", to = "2026-01-01T01:00:00Z";  // 12 slots of a 5-minute job
  ASSERT_EQ(Cli({"jobs", "backfill", id, "--from", from, "--to", to, "--dry-run"}, &out), 0) << out;
  outcome = Json::parse(out);
  EXPECT_EQ(outcome["slots"], 12);
  EXPECT_EQ(outcome["dryRun"], true);
  ASSERT_EQ(Cli({"jobs", "backfill", id, "--from", from, "--to", to, "--rate", "600"}, &out), 0) << out;
  EXPECT_EQ(Json::parse(out)["slots"], 12);
  ASSERT_EQ(Cli({"jobs", "backfill", id, "--from", from, "--to", to}, &out), 0) << out;
  EXPECT_EQ(Json::parse(out)["slots"], 0);
  EXPECT_EQ(Json::parse(out)["covered"], 12);
  EXPECT_EQ(Cli({"jobs", "backfill", id, "--from", to, "--to", from}, &out), 1) << "rejected: from after to";
  EXPECT_NE(out.find("invalid_backfill"), std::string::npos) << out;
  EXPECT_EQ(Cli({"jobs", "trigger", Id("nobody")}, &out), 1);
  EXPECT_NE(out.find("not_found"), std::string::npos) << out;
  EXPECT_NE(Cli({"jobs", "backfill", id, "--from", from}, &out), 0) << "--to is required";

  ASSERT_EQ(Cli({"jobs", "delete", id}, &out), 0) << out;
  EXPECT_EQ(Cli({"jobs", "get", id}, &out), 4);
  EXPECT_NE(out.find("no job with id"), std::string::npos) << out;
}

TEST_F(OperatorSurfaceTest, CliPutsACronJobAndPreviewsItsDstRules) {
  const std::string id = Id("cron");
  std::string out;
  ASSERT_EQ(Cli({"jobs", "put", "--id", id, "--cron", "30 2 * * *", "--time-zone", "America/New_York", "--topic",
                 world_->trigger_topic},
                &out),
            0)
      << out;
  ASSERT_EQ(Cli({"jobs", "get", id, "--json"}, &out), 0) << out;
  const Json job = Json::parse(out);
  EXPECT_EQ(job["cron"], "30 2 * * *");
  EXPECT_EQ(job["timeZone"], "America/New_York");
  EXPECT_EQ(job["intervalMinutes"], 0);
  ASSERT_EQ(job["nextFires"].size(), 3u);
  // New York springs forward on 2027-03-14: that day's 02:30 does not exist and fires at 03:00 EDT.
  const std::string shard_second = FormatIsoTime(ShardForId(id, 120) * 500).substr(16);  // ":SS.mmmZ"
  ASSERT_EQ(Cli({"jobs", "next", id, "-n", "200"}, &out), 0) << out;
  EXPECT_NE(out.find("2027-03-14T07:00" + shard_second + "  2027-03-14T03:00:00-04:00  dst:moved_from_gap"),
            std::string::npos)
      << out.substr(0, 2000);
  EXPECT_NE(out.find("2027-03-15T06:30" + shard_second + "  2027-03-15T02:30:00-04:00\n"), std::string::npos);
  ASSERT_EQ(Cli({"jobs", "get", id}, &out), 0) << out;
  EXPECT_NE(out.find("cron:      30 2 * * * in America/New_York"), std::string::npos) << out;
  EXPECT_NE(Cli({"jobs", "put", "--id", id, "--cron", "0 25 * * *", "--topic", world_->trigger_topic}, &out), 0);
  EXPECT_NE(out.find("invalid_cron"), std::string::npos) << out;
  EXPECT_NE(out.find("hour field at position 3"), std::string::npos) << out;
}

TEST_F(OperatorSurfaceTest, CliRejectsBadArgumentsWithOneLineReasons) {
  std::string out;
  EXPECT_NE(Cli({"jobs", "put", "--interval-minutes", "5", "--topic", "x"}, &out), 0);
  EXPECT_NE(out.find("needs an id"), std::string::npos) << out;
  EXPECT_NE(Cli({"jobs", "next", "x", "-n", "0"}, &out), 0);
  EXPECT_NE(out.find("-n"), std::string::npos) << out;
  EXPECT_NE(Cli({"jobs", "put", "--id", "x", "--topic", "t", "--interval-minutes", "5", "--details", "[1]"}, &out), 0);
  EXPECT_NE(out.find("--details must be a JSON object"), std::string::npos) << out;
  EXPECT_NE(Cli({"frobnicate"}, &out), 0);
  EXPECT_NE(Cli({"explain", "--shard", "500"}, &out), 0);
  EXPECT_NE(out.find("below the shard count of that minute (120)"), std::string::npos) << out;
  // A rejected command: belfry's own validation, reported through the outcome.
  EXPECT_EQ(Cli({"jobs", "put", "--id", Id("seven"), "--interval-minutes", "7", "--topic", "t"}, &out), 1);
  EXPECT_NE(out.find("unsupported_interval"), std::string::npos) << out;
  auto env = env_;
  env["BELFRY_SCHEDULER_TICK"] = "1s";
  EXPECT_EQ(RunBelfry({"shards"}, env, &out), 78);
  EXPECT_NE(out.find("scheduler.tick"), std::string::npos) << out;
}

TEST_F(OperatorSurfaceTest, HttpRoutesErrorsAndPagination) {
  std::string out;
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(Cli({"jobs", "put", "--id", Id("page-" + std::to_string(i)), "--interval-minutes", "60", "--topic",
                   world_->trigger_topic, "--owner", "pager"},
                  &out),
              0)
        << out;
  }
  auto r = Get("/v1/jobs/" + Id("page-3"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["id"], Id("page-3"));

  r = Get("/v1/jobs/" + Id("nope"));
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(Json::parse(r->body).contains("error"));
  EXPECT_EQ(Get("/v1/jobs?limit=0")->status, 400);
  EXPECT_EQ(Get("/v1/jobs?limit=abc")->status, 400);
  EXPECT_EQ(Get("/v1/jobs?limit=100000")->status, 400);
  EXPECT_EQ(Get("/v1/jobs?cursor=%%%")->status, 400);
  EXPECT_EQ(Get("/v1/jobs/" + Id("page-3") + "/next?n=0")->status, 400);

  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  do {
    r = Get("/v1/jobs?owner=pager&limit=3" + (cursor.empty() ? "" : "&cursor=" + cursor));
    ASSERT_EQ(r->status, 200) << r->body;
    const Json page = Json::parse(r->body);
    for (const Json& j : page["jobs"]) seen.push_back(j["id"]);
    cursor = page["next_cursor"].is_null() ? "" : page["next_cursor"].get<std::string>();
    ++pages;
  } while (!cursor.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));

  r = Get("/v1/jobs/" + Id("page-2") + "/next?n=4");
  ASSERT_EQ(r->status, 200) << r->body;
  const Json next = Json::parse(r->body);
  ASSERT_EQ(next["next"].size(), 4u);
  auto first = ParseIsoTime(next["next"][0].get<std::string>());
  ASSERT_TRUE(first);
  EXPECT_EQ(*first % 60'000, ShardForId(Id("page-2"), 120) * 500);

  r = Get("/v1/shards");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["shards"].size(), 120u);
  EXPECT_EQ(Get("/healthz", false)->status, 200);
  EXPECT_EQ(Get("/readyz", false)->status, 200);
}

// The JSON the CLI prints, from its first '{' to the end of that line.
std::string CliJson(const std::string& out) {
  const size_t at = out.find('{');
  if (at == std::string::npos) return out;
  return out.substr(at, out.find('\n', at) - at);
}

// `belfry ... --json` / `-o json` prints what the admin API answers for the same resource: the same
// bytes for pages of jobs, executions and changes (and the same cursors, which each side accepts)
// and for a job's next fires, the same fields and lag for the shards.
TEST_F(OperatorSurfaceTest, CliJsonIsTheApiView) {
  std::string out;
  const std::string owner = Id("views");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Cli({"jobs", "put", "--id", Id("view-" + std::to_string(i)), "--interval-minutes", "60", "--topic",
                   world_->trigger_topic, "--owner", owner},
                  &out),
              0)
        << out;
  }
  std::string cursor;
  int pages = 0;
  do {
    const std::string query = "/v1/jobs?owner=" + owner + "&limit=2" + (cursor.empty() ? "" : "&cursor=" + cursor);
    auto r = Get(query);
    ASSERT_EQ(r->status, 200) << r->body;
    std::vector<std::string> args = {"jobs", "list", "--owner", owner, "--limit", "2", "-o", "json"};
    if (!cursor.empty()) args.insert(args.end(), {"--cursor", cursor});
    ASSERT_EQ(Cli(args, &out), 0) << out;
    EXPECT_EQ(CliJson(out), r->body) << query;
    const Json page = Json::parse(r->body);
    cursor = page["next_cursor"].is_null() ? "" : page["next_cursor"].get<std::string>();
    ++pages;
  } while (!cursor.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(Cli({"jobs", "list", "--cursor", "%%%"}, &out), 64);
  EXPECT_NE(out.find("cursor is not valid"), std::string::npos) << out;

  const std::string id = Id("view-0");
  auto changes = Get("/v1/jobs/" + id + "/changes");
  ASSERT_EQ(changes->status, 200) << changes->body;
  ASSERT_EQ(Cli({"jobs", "audit", id, "-o", "json"}, &out), 0) << out;
  EXPECT_EQ(CliJson(out), changes->body);
  auto executions = Get("/v1/jobs/" + id + "/executions");
  if (executions->status == 200) {  // a node with execution history
    ASSERT_EQ(Cli({"jobs", "history", id, "-o", "json"}, &out), 0) << out;
    EXPECT_EQ(CliJson(out), executions->body);
  }

  auto shards = Get("/v1/shards");
  ASSERT_EQ(shards->status, 200) << shards->body;
  ASSERT_EQ(Cli({"shards", "--json"}, &out), 0) << out;
  using Ordered = nlohmann::ordered_json;  // keeps the fields' order
  const Ordered api = Ordered::parse(shards->body);
  const Ordered cli = Ordered::parse(CliJson(out));
  ASSERT_TRUE(cli.contains("now")) << out;
  ASSERT_EQ(cli["shards"].size(), api["shards"].size());
  for (size_t i = 0; i < api["shards"].size(); ++i) {
    const Ordered& a = api["shards"][i];
    const Ordered& c = cli["shards"][i];
    std::vector<std::string> api_keys, cli_keys;
    for (const auto& [k, v] : a.items()) api_keys.push_back(k);
    for (const auto& [k, v] : c.items()) cli_keys.push_back(k);
    EXPECT_EQ(cli_keys, api_keys) << "shard " << i;
    EXPECT_EQ(c["shard"], a["shard"]);
    // Both null (never fired) or both a number; the lag moves with the clock between the reads.
    EXPECT_EQ(c["lag_seconds"].is_null(), a["lag_seconds"].is_null()) << c.dump() << " vs " << a.dump();
  }

  // `jobs next --json` is GET /v1/jobs/{id}/next, with no count (the same default) and with one,
  // for an interval job, a cron job and a paused job. A slot may pass between the reads, so the
  // CLI's answer must be the API's before it or after it.
  const std::string cron_id = Id("view-cron"), paused_id = Id("view-1");
  ASSERT_EQ(Cli({"jobs", "put", "--id", cron_id, "--cron", "30 2 * * *", "--time-zone", "America/New_York", "--topic",
                 world_->trigger_topic},
                &out),
            0)
      << out;
  ASSERT_EQ(Cli({"jobs", "pause", paused_id}, &out), 0) << out;
  for (const std::string& job : {id, cron_id, paused_id}) {
    for (const std::string& n : {std::string(), std::string("7")}) {
      const std::string path = "/v1/jobs/" + job + "/next" + (n.empty() ? "" : "?n=" + n);
      std::vector<std::string> args = {"jobs", "next", job, "--json"};
      if (!n.empty()) args.insert(args.end(), {"-n", n});
      auto before = Get(path);
      ASSERT_EQ(before->status, 200) << before->body;
      ASSERT_EQ(Cli(args, &out), 0) << out;
      auto after = Get(path);
      ASSERT_EQ(after->status, 200) << after->body;
      const std::string cli = CliJson(out);
      EXPECT_TRUE(cli == before->body || cli == after->body) << path << "\ncli: " << cli << "\napi: " << before->body;
      const size_t fires = job == paused_id ? 0 : n.empty() ? 10 : 7;  // the API's default count is 10
      EXPECT_EQ(Json::parse(cli)["next"].size(), fires) << cli;
    }
  }
  EXPECT_NE(Cli({"jobs", "next", id, "-n", "1001"}, &out), 0) << "the API's bound: n in 1..1000";
}

TEST_F(OperatorSurfaceTest, TokenIsEnforcedAndOffLoopbackNeedsOne) {
  EXPECT_EQ(Get("/v1/shards", false)->status, 401);
  EXPECT_EQ(Get("/metrics", false)->status, 401);
  httplib::Client c("127.0.0.1", port_);
  EXPECT_EQ(c.Get("/v1/shards", {{"Authorization", "Bearer wrong"}})->status, 401);
  EXPECT_EQ(Get("/v1/shards")->status, 200);
  // Refuses to start on a non-loopback address without a token (it exits before binding).
  auto env = env_;
  env["BELFRY_ADMIN_LISTEN"] = "0.0.0.0:0";
  env["BELFRY_ADMIN_TOKEN"] = "";
  std::string out;
  EXPECT_NE(RunBelfry({"serve"}, env, &out), 0);
  EXPECT_NE(out.find("token"), std::string::npos) << out;
}

// Parses Prometheus text: every sample line is `name{labels} value`, every family has HELP and TYPE.
std::map<std::string, double> ParseProm(const std::string& text) {
  std::map<std::string, double> samples;
  std::set<std::string> help, type;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      help.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      type.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    const size_t sp = line.rfind(' ');
    EXPECT_NE(sp, std::string::npos) << line;
    const std::string name = line.substr(0, sp);
    size_t used = 0;
    const double v = std::stod(line.substr(sp + 1), &used);
    EXPECT_EQ(used, line.size() - sp - 1) << line;
    samples[name] = v;
    const std::string family = name.substr(0, name.find('{'));
    bool documented = false;
    for (const char* suffix : {"", "_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0) {
        const std::string base = family.substr(0, family.size() - s.size());
        if (help.count(base) && type.count(base)) documented = true;
      }
    }
    EXPECT_TRUE(documented) << "no HELP/TYPE for " << family;
  }
  return samples;
}

TEST_F(OperatorSurfaceTest, MetricsParseAndTriggerCountsMove) {
  auto r = Get("/metrics");
  ASSERT_EQ(r->status, 200);
  auto before = ParseProm(r->body);
  ASSERT_TRUE(before.count("belfry_triggers_emitted_total"));
  // A 1-minute job in a shard whose slot comes within ~15 s.
  const int32_t shard = static_cast<int32_t>(((WallMs() + 15'000) % 60'000) / 500);
  const std::string id = IdsInShard(Id("metric"), shard, 1)[0];
  std::string out;
  ASSERT_EQ(Cli({"jobs", "put", "--id", id, "--interval-minutes", "1", "--topic", world_->trigger_topic}, &out), 0)
      << out;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto after = ParseProm(Get("/metrics")->body);
        return after["belfry_triggers_emitted_total"] > before["belfry_triggers_emitted_total"];
      },
      80'000));
  auto after = ParseProm(Get("/metrics")->body);
  EXPECT_GT(after["belfry_trigger_lateness_seconds_count"], before["belfry_trigger_lateness_seconds_count"]);
  EXPECT_GT(after["belfry_commands_total{op=\"upsert\",status=\"applied\"}"], 0);
}

}  // namespace
}  // namespace belfry
