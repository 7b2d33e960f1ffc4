// Integration: ExecutionConsumer against the real broker.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kafka/execution_consumer.h"
#include "kafka/kafka_test_util.h"
#include "kafka/topic_admin.h"

namespace belfry {
namespace {

using belfry::testing::CommittedOffsets;
using belfry::testing::ProduceMessages;
using belfry::testing::RecordingExecutionStore;
using belfry::testing::TestKafkaConfig;
using belfry::testing::UniqueName;
using belfry::testing::WaitUntil;
using std::chrono::milliseconds;

constexpr int32_t kPartitions = 2;
constexpr int64_t kMaxPollIntervalMs = 6000;  // the broker's smallest session timeout is 6 s

// `n` valid reports, "<prefix>-<i>" succeeded for one slot each.
std::vector<std::pair<std::string, std::string>> Reports(const std::string& prefix, int n) {
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < n; ++i) {
    const std::string id = prefix + "-" + std::to_string(i);
    out.emplace_back(id, R"({"jobId":")" + id + R"(","scheduledFor":1795354652500,"status":"succeeded"})");
  }
  return out;
}

TEST(ExecutionConsumerTest, KeepsItsGroupMembershipThroughAStoreOutageLongerThanMaxPollInterval) {
  KafkaConfig config = TestKafkaConfig();
  config.executions_topic = UniqueName("kt.executions");
  config.executions_dlq_topic = UniqueName("kt.executions.dlq");
  config.executions_group_id = UniqueName("kt-executions");
  // A member that does not poll for max.poll.interval.ms leaves the group; keep that short.
  config.properties = {{"max.poll.interval.ms", std::to_string(kMaxPollIntervalMs)},
                       {"session.timeout.ms", "6000"},
                       {"heartbeat.interval.ms", "1000"}};
  ASSERT_TRUE(EnsureTopics(config, {TopicSpec{config.executions_topic, kPartitions, -1, {}},
                                    TopicSpec{config.executions_dlq_topic, 1, -1, {}}})
                  .ok());
  ASSERT_TRUE(ProduceMessages(config.executions_topic, Reports("before", 20)).ok());

  RecordingExecutionStore store;
  store.SetFailing(true);  // the database is down from the start
  ExecutionConsumerOptions options;
  options.retry_initial_ms = 50;
  options.retry_max_ms = 400;
  options.backoff_seed = 1;
  StatusOr<std::unique_ptr<ExecutionConsumer>> consumer =
      ExecutionConsumer::Create(config, store, ExecutionRules{}, options);
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  StopSignal stop;
  std::thread thread([&] { (*consumer)->Run(stop); });

  ASSERT_TRUE(WaitUntil([&] { return store.apply_calls() >= 1; }, milliseconds(20000)));
  // From its first failed attempt on, the consumer cannot finish a batch.
  const auto outage_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ProduceMessages(config.executions_topic, Reports("during", 20)).ok());
  // The outage outlasts max.poll.interval.ms by half. This wait is on the clock because the time
  // is the point: a member that stops polling is evicted once the interval passes, and nothing a
  // healthy consumer does marks its passing (an eviction would: a revocation, checked below).
  std::this_thread::sleep_until(outage_start + milliseconds(kMaxPollIntervalMs * 3 / 2));
  // Past the interval the consumer still retries the store.
  const int calls_past_interval = store.apply_calls();
  ASSERT_TRUE(WaitUntil([&] { return store.apply_calls() > calls_past_interval; }, milliseconds(10000)));
  EXPECT_TRUE(store.stored().empty());
  store.SetFailing(false);

  const auto committed_total = [&] {
    int64_t total = 0;
    for (const auto& [p, off] :
         CommittedOffsets(config.executions_group_id, config.executions_topic, kPartitions))
      total += off > 0 ? off : 0;
    return total;
  };
  EXPECT_TRUE(
      WaitUntil([&] { return store.stored().size() == 40 && committed_total() == 40; }, milliseconds(15000)));
  // A late re-delivery (the consumer reading again what it stored already, say from a fetch
  // position rewound when its partitions resumed) comes, within each partition, before anything
  // produced there now. So once one more report per partition is stored and its offset committed,
  // the consumer has read past everything it could re-deliver.
  const std::vector<std::pair<std::string, std::string>> last = Reports("after", kPartitions);
  for (int32_t p = 0; p < kPartitions; ++p) {
    ASSERT_TRUE(ProduceMessages(config.executions_topic, {last[static_cast<size_t>(p)]}, p).ok());
  }
  EXPECT_TRUE(WaitUntil([&] { return committed_total() == 40 + kPartitions; }, milliseconds(15000)));
  const ExecutionConsumerStats stats = (*consumer)->Stats();
  stop.Request();
  thread.join();

  EXPECT_EQ(stats.revocations_total, 0u) << "the group evicted the consumer while it backed off";
  EXPECT_EQ(stats.assignments_total, 1u);
  EXPECT_GT(stats.retries_total, 5u);
  const std::map<std::string, int> stored = store.stored();
  EXPECT_EQ(stored.size(), 40u + kPartitions);
  for (const auto& [key, times] : stored) EXPECT_EQ(times, 1) << key << " stored " << times << " times";
}

// Issue 33 §5: an exception from ExecutionStore::ApplyReports, thrown on the std::async thread of
// the first attempt, used to escape through its future and end Run (std::terminate). Now it is a
// retryable fault like any other.
TEST(ExecutionConsumerTest, AnExceptionFromTheStoreIsRetriedNotFatal) {
  KafkaConfig config = TestKafkaConfig();
  config.executions_topic = UniqueName("kt.executions");
  config.executions_dlq_topic = UniqueName("kt.executions.dlq");
  config.executions_group_id = UniqueName("kt-executions");
  ASSERT_TRUE(EnsureTopics(config, {TopicSpec{config.executions_topic, 1, -1, {}},
                                    TopicSpec{config.executions_dlq_topic, 1, -1, {}}})
                  .ok());
  ASSERT_TRUE(ProduceMessages(config.executions_topic, Reports("thrown", 5)).ok());
  RecordingExecutionStore store;
  store.ThrowNext(2);
  ExecutionConsumerOptions options;
  options.retry_initial_ms = 20;
  options.retry_max_ms = 100;
  StatusOr<std::unique_ptr<ExecutionConsumer>> consumer =
      ExecutionConsumer::Create(config, store, ExecutionRules{}, options);
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  StopSignal stop;
  std::thread thread([&] { (*consumer)->Run(stop); });
  const bool stored = WaitUntil([&] { return store.stored().size() == 5; }, milliseconds(20000));
  const ExecutionConsumerStats stats = (*consumer)->Stats();
  stop.Request();
  thread.join();
  EXPECT_TRUE(stored);
  EXPECT_GE(store.apply_calls(), 3);
  EXPECT_GE(stats.retries_total, 1u);
}

}  // namespace
}  // namespace belfry
