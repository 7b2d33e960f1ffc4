// Retries end to end (issue 7): a real `belfry serve`, commands and outcome reports over Kafka,
// triggers read back from the output topic. A failed outcome brings the next attempt at its
// backoff time, with the original scheduledFor, "attempt" and a belfry-attempt header, up to
// maxRetries and no further; repeated failure reports bring one retry.
//
// Why it takes minutes of real time: each retry is due at a real backoff time after a real trigger
// slot. The backoff arithmetic and the retry plan are unit-tested (core_test: Retry, Backoff), and
// pg_test.PgRetryTest checks where the rows land without waiting.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "belfry_process.h"
#include "core/iso_time.h"
#include "itest_support.h"
#include "plain_producer.h"

namespace belfry {
namespace {

using Json = nlohmann::json;

// One trigger of a job as received.
struct Trigger {
  int attempt = 0;  // from the value; 0 when absent
  std::string attempt_header;
  EpochMs scheduled_for_ms = 0;
  EpochMs produced_ms = 0;  // the message timestamp: when belfry sent it
};

class RetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = ItestWorld::Create("retry");
    ASSERT_NE(world_, nullptr);
    env_ = world_->Env();
    executions_topic_ = "it.executions." + world_->run_id;
    env_["BELFRY_KAFKA_EXECUTIONS_TOPIC"] = executions_topic_;
    env_["BELFRY_KAFKA_EXECUTIONS_DLQ_TOPIC"] = "it.executions.dlq." + world_->run_id;
    env_["BELFRY_KAFKA_EXECUTIONS_GROUP_ID"] = "it-exec-" + world_->run_id;
    std::string out;
    ASSERT_EQ(RunBelfry({"migrate"}, env_, &out), 0) << out;
    producer_ = std::make_unique<PlainProducer>(world_->brokers);
    triggers_ = std::make_unique<TopicCollector>(world_->brokers, std::vector<std::string>{world_->trigger_topic});
    server_ = std::make_unique<BelfryProcess>(env_, "/tmp/belfry-" + world_->run_id + ".log");
    ASSERT_TRUE(server_->WaitForLog("belfry serving", 30'000)) << server_->Log();
  }
  void TearDown() override {
    server_.reset();
    triggers_.reset();
    producer_.reset();
    world_.reset();
  }

  void Send(const std::string& topic, const std::string& key, const std::string& value) {
    auto [p, o] = producer_->Send(topic, key, value);
    ASSERT_GE(o, 0) << "publishing to " << topic;
  }
  std::string OneShotWithRetries(const std::string& id, EpochMs run_at, int max_retries,
                                 const std::string& backoff) {
    return Json{{"id", id},
                {"executionInterval", "ONCE"},
                {"runAt", FormatIsoTime(run_at)},
                {"topic", world_->trigger_topic},
                {"maxRetries", max_retries},
                {"retryBackoff", Json::parse(backoff)}}
        .dump();
  }
  void ReportFailed(const std::string& id, EpochMs scheduled_for, int attempt, EpochMs finished) {
    Send(executions_topic_, id,
         Json{{"jobId", id},
              {"scheduledFor", FormatIsoTime(scheduled_for)},
              {"status", "failed"},
              {"error", "HTTP 503"},
              {"finishedAt", FormatIsoTime(finished)},
              {"attempt", attempt}}
             .dump());
  }

  std::vector<Trigger> TriggersOf(const std::string& id) const {
    std::vector<Trigger> out;
    for (const TailRecord& r : triggers_->records()) {
      if (!r.value) continue;
      const Json v = Json::parse(*r.value);
      if (v["jobId"] != id) continue;
      Trigger t;
      t.attempt = v.contains("attempt") ? v["attempt"].get<int>() : 0;
      auto h = r.headers.find("belfry-attempt");
      if (h != r.headers.end()) t.attempt_header = h->second;
      t.scheduled_for_ms = ParseIsoTime(v["scheduledFor"].get<std::string>()).value_or(-1);
      t.produced_ms = r.timestamp_ms;
      out.push_back(t);
    }
    return out;
  }
  std::optional<Trigger> WaitForAttempt(const std::string& id, int attempt, int64_t timeout_ms) const {
    std::optional<Trigger> found;
    WaitFor(
        [&] {
          for (const Trigger& t : TriggersOf(id)) {
            if (t.attempt == attempt) found = t;
          }
          return found.has_value();
        },
        timeout_ms);
    return found;
  }
  int64_t RetryRows(const std::string& id, int attempt) const {
    return world_->db
        ->Exec("SELECT count(*) FROM jobs WHERE retry_of = '" + id + "' AND attempt = " + std::to_string(attempt))[0][0]
        .as<int64_t>();  // run ids are [a-z0-9-]
  }
  int64_t Stored(const std::string& id, int attempt) const {
    return world_->db
        ->Exec("SELECT count(*) FROM executions WHERE job_id = '" + id + "' AND attempt = " + std::to_string(attempt))[0][0]
        .as<int64_t>();
  }

  std::unique_ptr<ItestWorld> world_;
  std::map<std::string, std::string> env_;
  std::string executions_topic_;
  std::unique_ptr<PlainProducer> producer_;
  std::unique_ptr<TopicCollector> triggers_;
  std::unique_ptr<BelfryProcess> server_;
};

TEST_F(RetryTest, FailuresBringRetriesAtBackoffTimesUpToMaxRetriesAndDuplicatesBringOne) {
  // j: 2 retries, 30 s then 60 s. k: 1 retry after 1 s; its failure is reported three times.
  const std::string j = world_->run_id + "-j";
  const std::string k = world_->run_id + "-k";
  const EpochMs run_at = WallMs() + 10'000;
  Send(world_->commands_topic, j,
       OneShotWithRetries(j, run_at, 2, R"({"initialSeconds":30,"multiplier":2,"maxSeconds":60})"));
  Send(world_->commands_topic, k, OneShotWithRetries(k, run_at, 1, R"({"initialSeconds":1})"));

  const std::optional<Trigger> j0 = WaitForAttempt(j, 0, 120'000);
  const std::optional<Trigger> k0 = WaitForAttempt(k, 0, 120'000);
  ASSERT_TRUE(j0 && k0) << server_->Log();
  EXPECT_EQ(j0->attempt_header, "");  // ordinary triggers carry no attempt

  // k: the same failure three times, two at once and one a little later.
  const EpochMs k_failed = WallMs();
  ReportFailed(k, k0->scheduled_for_ms, 0, k_failed);
  ReportFailed(k, k0->scheduled_for_ms, 0, k_failed);
  // j's first failure.
  const EpochMs f0 = WallMs();
  ReportFailed(j, j0->scheduled_for_ms, 0, f0);
  ASSERT_TRUE(WaitFor([&] { return Stored(k, 0) == 1; }, 30'000));
  ReportFailed(k, k0->scheduled_for_ms, 0, k_failed);

  const std::optional<Trigger> j1 = WaitForAttempt(j, 1, 150'000);
  ASSERT_TRUE(j1) << server_->Log();
  EXPECT_EQ(j1->attempt_header, "1");
  EXPECT_EQ(j1->scheduled_for_ms, j0->scheduled_for_ms);
  EXPECT_GE(j1->produced_ms, f0 + 30'000);           // not before the backoff
  EXPECT_LE(j1->produced_ms, f0 + 30'000 + 65'000);  // at the shard's first slot after it

  const EpochMs f1 = WallMs();
  ReportFailed(j, j0->scheduled_for_ms, 1, f1);
  const std::optional<Trigger> j2 = WaitForAttempt(j, 2, 200'000);
  ASSERT_TRUE(j2) << server_->Log();
  EXPECT_EQ(j2->attempt_header, "2");
  EXPECT_EQ(j2->scheduled_for_ms, j0->scheduled_for_ms);
  EXPECT_GE(j2->produced_ms, f1 + 60'000);
  EXPECT_LE(j2->produced_ms, f1 + 60'000 + 65'000);

  // The last allowed attempt fails: nothing more is scheduled.
  ReportFailed(j, j0->scheduled_for_ms, 2, WallMs());
  ASSERT_TRUE(WaitFor([&] { return Stored(j, 2) == 1; }, 30'000));
  EXPECT_EQ(RetryRows(j, 3), 0);

  // k got exactly one retry (k's retry slot passed long ago); its failure brings no second.
  const std::vector<Trigger> ks = TriggersOf(k);
  int k_retries = 0;
  for (const Trigger& t : ks) {
    if (t.attempt == 1) {
      ++k_retries;
      EXPECT_EQ(t.attempt_header, "1");
      EXPECT_GE(t.produced_ms, k_failed + 1'000);
    }
    EXPECT_LE(t.attempt, 1);
  }
  EXPECT_EQ(k_retries, 1);
  EXPECT_EQ(RetryRows(k, 1), 1);
  ReportFailed(k, k0->scheduled_for_ms, 1, WallMs());
  ASSERT_TRUE(WaitFor([&] { return Stored(k, 1) == 1; }, 30'000));
  EXPECT_EQ(RetryRows(k, 2), 0);

  // Every attempt of j arrived exactly once.
  std::map<int, int> per_attempt;
  for (const Trigger& t : TriggersOf(j)) ++per_attempt[t.attempt];
  EXPECT_EQ(per_attempt, (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}}));
}

}  // namespace
}  // namespace belfry
