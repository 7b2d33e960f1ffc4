// Commands over HTTP (issue 37, docs/console.md): POST /v1/commands on the real `belfry serve`
// publishes to the real commands topic and answers with the outcome from the results topic. The
// write token comes from the real `belfry token`; the client keeps its connection alive, as the
// console's browser does.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "belfry_process.h"
#include "itest_support.h"

namespace belfry {
namespace {

using Json = nlohmann::json;

constexpr char kSecret[] = "itest-write-token-secret-of-at-least-32-bytes";

class HttpCommandsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    world_ = ItestWorld::Create("httpcmd").release();
    ASSERT_NE(world_, nullptr);
    env_ = world_->Env();
    env_["BELFRY_ADMIN_WRITE_TOKEN_SECRET"] = kSecret;
    env_["BELFRY_SCHEDULER_ENABLED"] = "false";  // commands only: nothing here fires
    std::string out;
    ASSERT_EQ(RunBelfry({"token", "--actor", "ana@ops", "--ttl", "1h"}, env_, &out), 0) << out;
    // stdout has the token alone on its line (stderr, mixed in, says until when it is valid).
    const size_t at = out.find("eyJ");
    ASSERT_NE(at, std::string::npos) << out;
    token_ = out.substr(at, out.find('\n', at) - at);
    ASSERT_EQ(std::count(token_.begin(), token_.end(), '.'), 2) << out;
    server_ = new BelfryProcess(env_, "/tmp/belfry-" + world_->run_id + ".log");
    ASSERT_TRUE(server_->WaitForLog("belfry serving", 30'000)) << server_->Log();
    port_ = server_->AdminPort();
    ASSERT_GT(port_, 0);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete world_;
  }
  void SetUp() override {
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_keep_alive(true);
    client_->set_read_timeout(30);
  }
  httplib::Result Post(const Json& command, const std::string& token) {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return client_->Post("/v1/commands", h, command.dump(), "application/json");
  }
  httplib::Result Get(const std::string& path) {
    return client_->Get(path, {{"Authorization", "Bearer " + token_}});
  }

  static ItestWorld* world_;
  static std::map<std::string, std::string> env_;
  static std::string token_;
  static BelfryProcess* server_;
  static int port_;
  std::unique_ptr<httplib::Client> client_;
};

ItestWorld* HttpCommandsTest::world_ = nullptr;
std::map<std::string, std::string> HttpCommandsTest::env_;
std::string HttpCommandsTest::token_;
BelfryProcess* HttpCommandsTest::server_ = nullptr;
int HttpCommandsTest::port_ = 0;

TEST_F(HttpCommandsTest, CommandsApplyThroughKafkaAndTheAuditTrailNamesTheTokensActor) {
  const std::string id = world_->run_id + "-http";
  auto r = Post({{"id", id}, {"intervalMinutes", 15}, {"topic", world_->trigger_topic}, {"owner", "console"}}, token_);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body << "\n" << server_->Log();
  Json outcome = Json::parse(r->body);
  EXPECT_EQ(outcome["status"], "applied");
  EXPECT_EQ(outcome["op"], "upsert");
  EXPECT_TRUE(outcome["offset"].is_number_integer());

  // The same connection: a pause with a reason, then the job and its audit trail.
  r = Post({{"op", "pause"}, {"id", id}, {"reason", "carrier outage"}}, token_);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  r = Get("/v1/jobs/" + id);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json::parse(r->body)["paused"], true);
  r = Get("/v1/jobs/" + id + "/changes");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json changes = Json::parse(r->body)["changes"];
  ASSERT_EQ(changes.size(), 2u) << r->body;
  EXPECT_EQ(changes[0]["op"], "pause");
  EXPECT_EQ(changes[0]["actor"], "ana@ops");  // the token's, not anything the request said
  EXPECT_EQ(changes[0]["reason"], "carrier outage");
  EXPECT_EQ(changes[1]["actor"], "ana@ops");
}

TEST_F(HttpCommandsTest, AnInvalidCommandIs422WithItsReasonAndBadTokensPublishNothing) {
  const std::string id = world_->run_id + "-bad";
  auto r = Post({{"id", id}, {"intervalMinutes", 7}, {"topic", world_->trigger_topic}}, token_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422) << r->body;
  Json outcome = Json::parse(r->body);
  EXPECT_EQ(outcome["status"], "rejected");
  EXPECT_NE(outcome["error"].get<std::string>().find("unsupported_interval"), std::string::npos) << r->body;

  const std::string unseen = world_->run_id + "-unseen";
  const Json upsert = {{"id", unseen}, {"intervalMinutes", 5}, {"topic", world_->trigger_topic}};
  r = Post(upsert, "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401) << r->body;
  r = Post(upsert, token_.substr(0, token_.size() - 2) + "xx");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401) << r->body;
  // Nothing was published for it: the job never appears, while a later valid command applies.
  r = Post({{"id", id + "-later"}, {"intervalMinutes", 5}, {"topic", world_->trigger_topic}}, token_);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(world_->db->Exec("SELECT count(*) FROM jobs WHERE id = '" + unseen + "'")[0][0].as<int64_t>(), 0);
}

}  // namespace
}  // namespace belfry
