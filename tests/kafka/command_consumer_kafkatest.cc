// Integration: CommandConsumer, CommandPublisher and OutcomeWaiter against the real broker.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/topic_policy.h"
#include "kafka/command_consumer.h"
#include "kafka/command_publisher.h"
#include "kafka/kafka_test_util.h"
#include "kafka/topic_admin.h"
#include "kafka/topic_tail.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

using belfry::testing::CommittedOffsets;
using belfry::testing::RecordingCommandStore;
using belfry::testing::TestKafkaConfig;
using belfry::testing::WaitUntil;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int64_t kOutcomeTimeoutMs = 60000;

class CommandConsumerTest : public ::testing::Test {
 protected:
  // Creates the three topics, with `command_partitions` partitions for the commands topic.
  void SetUpTopics(int32_t command_partitions) {
    command_partitions_ = command_partitions;
    const Status s = EnsureTopics(
        config_, {TopicSpec{config_.commands_topic, command_partitions, -1, {}},
                  TopicSpec{config_.dlq_topic, 1, -1, {}}, TopicSpec{config_.results_topic, 2, -1, {}}});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  CommandRules Rules() const {
    CommandRules rules;
    rules.intervals = SchedulerConfig{}.intervals;
    rules.shard_count = 120;
    rules.topic_policy = &policy_;
    rules.time_zones = &SystemTimeZones();
    return rules;
  }

  std::unique_ptr<CommandPublisher> NewPublisher() {
    CommandPublisherOptions options;
    options.wait_for_outcomes = true;
    StatusOr<std::unique_ptr<CommandPublisher>> p = CommandPublisher::Create(config_, options);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p.value()) : nullptr;
  }

  // Runs a CommandConsumer on its own thread until Stop() or destruction.
  class Running {
   public:
    Running(const KafkaConfig& config, CommandStore& store, CommandRules rules) {
      CommandConsumerOptions options;
      options.retry_initial_ms = 50;
      options.retry_max_ms = 400;
      options.lag_refresh_ms = 200;
      StatusOr<std::unique_ptr<CommandConsumer>> c =
          CommandConsumer::Create(config, store, std::move(rules), options);
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      if (!c.ok()) return;
      consumer_ = std::move(c.value());
      thread_ = std::thread([this] { consumer_->Run(stop_); });
    }
    ~Running() { Stop(); }
    void Stop() {
      stop_.Request();
      if (thread_.joinable()) thread_.join();
    }
    CommandConsumer& consumer() { return *consumer_; }

   private:
    StopSignal stop_;
    std::unique_ptr<CommandConsumer> consumer_;
    std::thread thread_;
  };

  static std::string Upsert(const std::string& id, int n) {
    return json{{"id", id},
                {"owner", "tracking-svc"},
                {"executionInterval", "EVERY_15_MINUTES"},
                {"topic", "tracking.poll"},
                {"key", "shipment-" + std::to_string(n)},
                {"jobDetails", {{"shipmentId", n}}}}
        .dump();
  }

  json WaitOutcome(CommandPublisher& p, const std::string& id) {
    StatusOr<std::string> o = p.WaitForOutcome(id, kOutcomeTimeoutMs);
    EXPECT_TRUE(o.ok()) << id << ": " << o.status().ToString();
    return o.ok() ? json::parse(*o) : json();
  }

  std::vector<TailRecord> ReadTopic(const std::string& topic, size_t want) {
    return testing::ReadTopicFromStart(config_, topic, want);
  }

  int64_t CommittedTotal() {
    int64_t total = 0;
    for (const auto& [p, off] :
         CommittedOffsets(config_.group_id, config_.commands_topic, command_partitions_)) {
      if (off >= 0) total += off;
    }
    return total;
  }

  KafkaConfig config_ = TestKafkaConfig();
  TopicPolicy policy_{{"*"}, {config_.commands_topic, config_.dlq_topic, config_.results_topic}};
  int32_t command_partitions_ = 1;
};

TEST_F(CommandConsumerTest, AppliesValidCommandsDeadLettersTheRestAndCommits) {
  SetUpTopics(4);
  std::unique_ptr<CommandPublisher> publisher = NewPublisher();
  ASSERT_NE(publisher, nullptr);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(publisher->Publish("job-" + std::to_string(i), Upsert("job-" + std::to_string(i), i)).ok());
  ASSERT_TRUE(publisher->Publish("job-1", json{{"op", "pause"}, {"id", "job-1"}}.dump()).ok());
  ASSERT_TRUE(publisher->Publish("job-2", std::nullopt).ok());  // tombstone = delete
  ASSERT_TRUE(publisher->Publish("bad-json", std::string("{not json"), {{"trace-id", "abc-123"}}).ok());
  ASSERT_TRUE(publisher->Publish("job-x", Upsert("job-y", 9)).ok());  // key differs from id
  ASSERT_TRUE(
      publisher
          ->Publish("job-f",
                    json{{"id", "job-f"}, {"intervalMinutes", 5}, {"topic", config_.commands_topic}}.dump())
          .ok());  // belfry's own topic
  ASSERT_TRUE(publisher->Publish("job-u", json{{"op", "explode"}, {"id", "job-u"}}.dump()).ok());
  constexpr int kCommands = 11;

  RecordingCommandStore store;
  Running running(config_, store, Rules());

  for (int i = 0; i < 5; ++i) {
    const json o = WaitOutcome(*publisher, "job-" + std::to_string(i));
    EXPECT_EQ(o["status"], "applied") << o;
    EXPECT_EQ(o["op"], "upsert");
    EXPECT_TRUE(o["error"].is_null());
  }
  EXPECT_EQ(WaitOutcome(*publisher, "job-1")["op"], "pause");
  EXPECT_EQ(WaitOutcome(*publisher, "job-2")["op"], "delete");
  const json bad = WaitOutcome(*publisher, "bad-json");
  EXPECT_EQ(bad["status"], "rejected");
  EXPECT_EQ(bad["error"].get<std::string>().rfind("invalid_json: ", 0), 0u) << bad;
  EXPECT_EQ(WaitOutcome(*publisher, "job-x")["error"].get<std::string>().rfind("key_mismatch", 0), 0u);
  EXPECT_EQ(WaitOutcome(*publisher, "job-f")["error"].get<std::string>().rfind("forbidden_topic", 0), 0u);
  EXPECT_EQ(WaitOutcome(*publisher, "job-u")["error"].get<std::string>().rfind("unknown_op", 0), 0u);

  // The store saw the valid commands, reduced per job.
  const auto rows = store.rows();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_TRUE(rows.contains("job-0") && rows.contains("job-3") && rows.contains("job-4"));
  EXPECT_FALSE(rows.contains("job-2"));
  EXPECT_TRUE(rows.at("job-1").paused);
  EXPECT_EQ(rows.at("job-0").spec.topic, "tracking.poll");
  EXPECT_EQ(rows.at("job-0").spec.key, "shipment-0");
  EXPECT_EQ(rows.at("job-0").spec.interval_minutes, 15);
  EXPECT_EQ(json::parse(rows.at("job-0").spec.details_json), json({{"shipmentId", 0}}));

  // Every rejection is in the DLQ with its original key, value and headers plus belfry's.
  const std::vector<TailRecord> dlq = ReadTopic(config_.dlq_topic, 4);
  ASSERT_EQ(dlq.size(), 4u);
  std::map<std::string, TailRecord> dlq_by_key;
  for (const TailRecord& r : dlq) dlq_by_key[r.key.value_or("")] = r;
  ASSERT_TRUE(dlq_by_key.contains("bad-json"));
  const TailRecord& d = dlq_by_key.at("bad-json");
  EXPECT_EQ(d.value, std::optional<std::string>("{not json"));
  EXPECT_EQ(d.headers.at("trace-id"), "abc-123");
  EXPECT_EQ(d.headers.at("belfry-error"), bad["error"].get<std::string>());
  EXPECT_EQ(d.headers.at("belfry-source-partition"), std::to_string(bad["partition"].get<int>()));
  EXPECT_EQ(d.headers.at("belfry-source-offset"), std::to_string(bad["offset"].get<int64_t>()));
  EXPECT_EQ(dlq_by_key.at("job-x").value, std::optional<std::string>(Upsert("job-y", 9)));
  EXPECT_TRUE(dlq_by_key.contains("job-f"));
  EXPECT_TRUE(dlq_by_key.contains("job-u"));

  // One outcome per command, keyed by id.
  const std::vector<TailRecord> results = ReadTopic(config_.results_topic, kCommands);
  ASSERT_EQ(results.size(), static_cast<size_t>(kCommands));
  for (const TailRecord& r : results) {
    ASSERT_TRUE(r.key && r.value);
    EXPECT_EQ(json::parse(*r.value)["id"], *r.key);
  }

  ASSERT_TRUE(WaitUntil(
      [&] {
        return running.consumer().Stats().commands_applied_total +
                   running.consumer().Stats().commands_rejected_total ==
               static_cast<uint64_t>(kCommands);
      },
      milliseconds(10000)));
  const CommandConsumerStats stats = running.consumer().Stats();
  EXPECT_EQ(stats.commands_applied_total, 7u);
  EXPECT_EQ(stats.commands_rejected_total, 4u);
  EXPECT_EQ(stats.applied_by_op.at("upsert"), 5u);
  EXPECT_EQ(stats.applied_by_op.at("delete"), 1u);
  EXPECT_EQ(stats.rejected_by_reason.at("invalid_json"), 1u);
  EXPECT_EQ(stats.rejected_by_reason.at("key_mismatch"), 1u);
  EXPECT_GE(stats.batches_total, 1u);
  EXPECT_EQ(stats.apply_retries_total, 0u);
  EXPECT_TRUE(WaitUntil([&] { return running.consumer().Stats().consumer_lag == 0; }, milliseconds(5000)));
  running.Stop();

  // Offsets were committed past every command...
  EXPECT_EQ(CommittedTotal(), kCommands);

  // ...so a new member of the group starts after them and sees only what comes next.
  RecordingCommandStore store2;
  Running second(config_, store2, Rules());
  ASSERT_TRUE(publisher->Publish("job-9", Upsert("job-9", 9)).ok());
  EXPECT_EQ(WaitOutcome(*publisher, "job-9")["status"], "applied");
  second.Stop();
  const auto applied = store2.applied();
  size_t actions = 0;
  for (const auto& batch : applied) {
    for (const JobAction& a : batch) {
      EXPECT_EQ(a.id, "job-9");
      ++actions;
    }
  }
  EXPECT_EQ(actions, 1u);
  EXPECT_EQ(store2.rows().size(), 1u);
}

TEST_F(CommandConsumerTest, RetriesTheStoreAndCommitsOnlyAfterItSucceeds) {
  SetUpTopics(1);
  std::unique_ptr<CommandPublisher> publisher = NewPublisher();
  ASSERT_NE(publisher, nullptr);
  for (const char* id : {"job-a", "job-b", "job-c"}) ASSERT_TRUE(publisher->Publish(id, Upsert(id, 1)).ok());

  RecordingCommandStore store;
  store.FailNextApplies(2, Status::Retryable("connection to PostgreSQL lost"));
  std::vector<int64_t> committed_during_failures;
  store.SetOnApply([&](int call) {
    if (call <= 2) committed_during_failures.push_back(CommittedTotal());
  });
  Running running(config_, store, Rules());
  for (const char* id : {"job-a", "job-b", "job-c"})
    EXPECT_EQ(WaitOutcome(*publisher, id)["status"], "applied");

  EXPECT_EQ(store.apply_calls(), 3);
  ASSERT_EQ(store.applied().size(), 1u);
  EXPECT_EQ(store.applied()[0].size(), 3u);
  EXPECT_EQ(store.rows().size(), 3u);
  EXPECT_EQ(committed_during_failures, (std::vector<int64_t>{0, 0}));
  EXPECT_TRUE(WaitUntil([&] { return CommittedTotal() == 3; }, milliseconds(10000)));
  EXPECT_EQ(running.consumer().Stats().apply_retries_total, 2u);
}

TEST_F(CommandConsumerTest, StopDuringRetryLeavesTheBatchForTheNextOwner) {
  SetUpTopics(2);
  std::unique_ptr<CommandPublisher> publisher = NewPublisher();
  ASSERT_NE(publisher, nullptr);
  ASSERT_TRUE(publisher->Publish("job-s1", Upsert("job-s1", 1)).ok());
  ASSERT_TRUE(publisher->Publish("job-s2", Upsert("job-s2", 2)).ok());

  {
    // A store that always fails, even with a non-retryable error: nothing is skipped.
    RecordingCommandStore broken;
    broken.FailNextApplies(1000000, Status::Invalid("constraint", "jobs_pkey violated"));
    Running running(config_, broken, Rules());
    ASSERT_TRUE(WaitUntil([&] { return broken.apply_calls() >= 3; }, milliseconds(30000)));
    const auto start = std::chrono::steady_clock::now();
    running.Stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10)) << "stop must be prompt";
    EXPECT_TRUE(broken.applied().empty());
  }
  EXPECT_EQ(CommittedTotal(), 0);

  RecordingCommandStore store;
  Running running(config_, store, Rules());
  EXPECT_EQ(WaitOutcome(*publisher, "job-s1")["status"], "applied");
  EXPECT_EQ(WaitOutcome(*publisher, "job-s2")["status"], "applied");
  EXPECT_EQ(store.rows().size(), 2u);
  EXPECT_TRUE(WaitUntil([&] { return CommittedTotal() == 2; }, milliseconds(10000)));
}

TEST_F(CommandConsumerTest, KeepsApplyingWhileAnEarlierBatchIsUnacknowledgedButCommitsInOrder) {
  SetUpTopics(1);
  std::unique_ptr<CommandPublisher> publisher = NewPublisher();
  ASSERT_NE(publisher, nullptr);
  // One batch whose DLQ record can never be acknowledged (the DLQ topic name is invalid)...
  ASSERT_TRUE(publisher->Publish("job-p1", Upsert("job-p1", 1)).ok());
  ASSERT_TRUE(publisher->Publish("bad-json", std::string("{not json")).ok());
  ASSERT_TRUE(publisher->Publish("job-p2", Upsert("job-p2", 2)).ok());

  KafkaConfig broken_dlq = config_;
  broken_dlq.dlq_topic = "no such topic!";
  {
    RecordingCommandStore store;
    Running running(broken_dlq, store, Rules());
    ASSERT_TRUE(WaitUntil([&] { return store.rows().size() == 2; }, milliseconds(30000)));
    // ...does not stop later batches from being applied (pipelining)...
    ASSERT_TRUE(publisher->Publish("job-p3", Upsert("job-p3", 3)).ok());
    ASSERT_TRUE(WaitUntil([&] { return store.rows().contains("job-p3"); }, milliseconds(30000)));
    // ...but no offset is committed past the unacknowledged batch, not even the later batch's:
    // once job-p3's batch is acknowledged, a commit round holds it back.
    EXPECT_TRUE(WaitUntil(
        [&] { return running.consumer().Stats().batches_waiting_to_commit == 1 || CommittedTotal() != 0; },
        milliseconds(30000)));
    EXPECT_EQ(CommittedTotal(), 0);
    EXPECT_EQ(running.consumer().Stats().batches_waiting_to_commit, 1u);
    EXPECT_EQ(running.consumer().Stats().batches_total, 0u);
    const auto start = std::chrono::steady_clock::now();
    running.Stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10)) << "stop must be prompt";
  }
  EXPECT_EQ(CommittedTotal(), 0);

  // The next owner re-applies everything, publishes every record, and commits past all four.
  RecordingCommandStore store;
  Running running(config_, store, Rules());
  EXPECT_EQ(WaitOutcome(*publisher, "job-p3")["status"], "applied");
  EXPECT_TRUE(WaitUntil([&] { return CommittedTotal() == 4; }, milliseconds(10000)));
  EXPECT_EQ(store.rows().size(), 3u);
  EXPECT_EQ(ReadTopic(config_.dlq_topic, 1).size(), 1u);
}

TEST_F(CommandConsumerTest, OutcomeWaitTimesOutAsRetryable) {
  SetUpTopics(1);
  std::unique_ptr<CommandPublisher> publisher = NewPublisher();
  ASSERT_NE(publisher, nullptr);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> o = publisher->WaitForOutcome("nobody", 500);
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(o.status().retryable());
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
}

}  // namespace
}  // namespace belfry
