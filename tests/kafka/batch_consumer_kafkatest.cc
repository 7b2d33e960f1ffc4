// Integration: BatchConsumer, the loop both consumers share, against the real broker, with the
// apply step written by the test.
#include "kafka/batch_consumer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kafka/kafka_test_util.h"
#include "kafka/topic_admin.h"
#include "kafka/topic_tail.h"

namespace belfry {
namespace {

using belfry::testing::CommittedOffsets;
using belfry::testing::ProduceMessages;
using belfry::testing::TestKafkaConfig;
using belfry::testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;
using MessagePtr = BatchConsumer::MessagePtr;

std::string KeyOf(const RdKafka::Message& m) {
  if (m.key_pointer() == nullptr) return std::string();
  return std::string(static_cast<const char*>(m.key_pointer()), m.key_len());
}

class BatchConsumerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status s = EnsureTopics(config_, {TopicSpec{config_.commands_topic, 1, -1, {}},
                                            TopicSpec{config_.dlq_topic, 1, -1, {}},
                                            TopicSpec{config_.results_topic, 1, -1, {}}});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::unique_ptr<BatchConsumer> NewConsumer(size_t batch_max) {
    BatchConsumerOptions o;
    o.client_id = "batch-consumer-test";
    o.topic = config_.commands_topic;
    o.consumer_settings = {{"group.id", config_.group_id},
                           {"enable.auto.commit", "false"},
                           {"auto.offset.reset", "earliest"},
                           {"enable.partition.eof", "false"}};
    o.batch_max = batch_max;
    o.retry = BackoffPolicy{20, 100};
    o.backoff_seed = 1;
    StatusOr<std::unique_ptr<BatchConsumer>> c = BatchConsumer::Create(config_, std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c.value()) : nullptr;
  }

  int64_t Committed() {
    const int64_t off = CommittedOffsets(config_.group_id, config_.commands_topic, 1)[0];
    return off < 0 ? 0 : off;
  }

  std::vector<TailRecord> ReadTopic(const std::string& topic, size_t want) {
    return testing::ReadTopicFromStart(config_, topic, want);
  }

  KafkaConfig config_ = TestKafkaConfig();
};

TEST_F(BatchConsumerTest, PublishesEachBatchsRecordsThenCommitsItsOffsetsInApplyOrder) {
  std::vector<std::pair<std::string, std::string>> messages;
  for (int i = 0; i < 12; ++i) messages.emplace_back("k" + std::to_string(i), i == 4 ? "bad" : "ok");
  ASSERT_TRUE(ProduceMessages(config_.commands_topic, messages).ok());

  std::unique_ptr<BatchConsumer> consumer = NewConsumer(5);
  ASSERT_NE(consumer, nullptr);
  std::mutex mu;
  std::vector<std::string> applied_keys;    // in apply order
  std::vector<std::string> committed_keys;  // in commit order
  StopSignal stop;
  std::thread thread([&] {
    consumer->Run(stop, [&](const std::vector<MessagePtr>& batch, StopSignal&) {
      EXPECT_LE(batch.size(), 5u);
      BatchConsumer::Applied applied;
      std::vector<std::string> keys;
      for (const MessagePtr& m : batch) {
        keys.push_back(KeyOf(*m));
        const std::string value(static_cast<const char*>(m->payload()), m->len());
        if (value == "bad") {
          applied.records.push_back(DlqRecord(*m, &config_.dlq_topic, Status::Invalid("bad_value", "nope")));
        }
        OutgoingRecord outcome;
        outcome.topic = &config_.results_topic;
        outcome.key = keys.back();
        outcome.value = value;
        applied.records.push_back(std::move(outcome));
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        applied_keys.insert(applied_keys.end(), keys.begin(), keys.end());
      }
      applied.on_committed = [&, keys] {
        // Committed already: the group's offset covers the whole batch.
        EXPECT_GE(Committed(), static_cast<int64_t>(committed_keys.size() + keys.size()));
        std::lock_guard<std::mutex> lock(mu);
        committed_keys.insert(committed_keys.end(), keys.begin(), keys.end());
      };
      return std::optional<BatchConsumer::Applied>(std::move(applied));
    });
  });
  const bool done = WaitUntil(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return committed_keys.size() == messages.size();
      },
      milliseconds(30000));
  stop.Request();
  thread.join();
  ASSERT_TRUE(done);
  EXPECT_EQ(Committed(), 12);
  std::vector<std::string> expected;
  for (const auto& [key, value] : messages) expected.push_back(key);
  EXPECT_EQ(applied_keys, expected);
  EXPECT_EQ(committed_keys, expected);

  // Every record was published: an outcome per message, in order, and the DLQ record with the
  // source's position.
  const std::vector<TailRecord> results = ReadTopic(config_.results_topic, messages.size());
  ASSERT_EQ(results.size(), messages.size());
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].key, std::optional<std::string>(expected[i]));
  const std::vector<TailRecord> dlq = ReadTopic(config_.dlq_topic, 1);
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_EQ(dlq[0].key, std::optional<std::string>("k4"));
  EXPECT_EQ(dlq[0].value, std::optional<std::string>("bad"));
  EXPECT_EQ(dlq[0].headers.at("belfry-error"), "bad_value: nope");
  EXPECT_EQ(dlq[0].headers.at("belfry-source-partition"), "0");
  EXPECT_EQ(dlq[0].headers.at("belfry-source-offset"), "4");
  const BatchConsumerStats stats = consumer->Stats();
  EXPECT_EQ(stats.publish_retries_total, 0u);
  EXPECT_EQ(stats.assignments_total, 1u);
}

TEST_F(BatchConsumerTest, IsolatesWhatTheStoreRefusesAndRetriesTheRest) {
  std::vector<std::pair<std::string, std::string>> messages;
  for (const char* key : {"a", "b", "poison", "c", "d"}) messages.emplace_back(key, "v");
  ASSERT_TRUE(ProduceMessages(config_.commands_topic, messages).ok());

  std::unique_ptr<BatchConsumer> consumer = NewConsumer(100);
  ASSERT_NE(consumer, nullptr);
  std::mutex mu;
  std::set<std::string> stored;
  std::set<std::string> refused;
  int faults_left = 2;  // the first two store calls fail as a lost connection would
  StopSignal stop;
  std::thread thread([&] {
    consumer->Run(stop, [&](const std::vector<MessagePtr>& batch, StopSignal& s) {
      int32_t attempts = 0;
      std::optional<std::vector<RefusedItem>> r = consumer->ApplyIsolating(
          "test items", batch.size(),
          [&](size_t first, size_t last) {
            if (faults_left > 0) {
              --faults_left;
              return Status::Retryable("connection lost");
            }
            for (size_t i = first; i < last; ++i) {
              if (KeyOf(*batch[i]) == "poison") return Status::Invalid("check_violation", "refused");
            }
            std::lock_guard<std::mutex> lock(mu);
            for (size_t i = first; i < last; ++i) stored.insert(KeyOf(*batch[i]));
            return Status::Ok();
          },
          s, &attempts);
      if (!r) return std::optional<BatchConsumer::Applied>();
      std::lock_guard<std::mutex> lock(mu);
      for (const RefusedItem& item : *r) {
        EXPECT_EQ(item.status.reason(), "check_violation");
        refused.insert(KeyOf(*batch[item.index]));
      }
      return std::optional<BatchConsumer::Applied>(BatchConsumer::Applied{});
    });
  });
  const bool done = WaitUntil([&] { return Committed() == 5; }, milliseconds(30000));
  const BatchConsumerStats stats = consumer->Stats();
  stop.Request();
  thread.join();
  ASSERT_TRUE(done);
  EXPECT_EQ(stored, (std::set<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(refused, (std::set<std::string>{"poison"}));
  EXPECT_EQ(stats.apply_retries_total, 2u);
}

TEST_F(BatchConsumerTest, AStopBeforeTheStoreAnswersCommitsNothing) {
  ASSERT_TRUE(ProduceMessages(config_.commands_topic, {{"a", "v"}, {"b", "v"}}).ok());
  std::unique_ptr<BatchConsumer> consumer = NewConsumer(100);
  ASSERT_NE(consumer, nullptr);
  std::atomic<int> calls{0};
  std::atomic<bool> committed{false};
  StopSignal stop;
  std::thread thread([&] {
    consumer->Run(stop, [&](const std::vector<MessagePtr>& batch, StopSignal& s) {
      int32_t attempts = 0;
      std::optional<std::vector<RefusedItem>> r = consumer->ApplyIsolating(
          "test items", batch.size(),
          [&](size_t, size_t) {
            ++calls;
            return Status::Retryable("connection lost");
          },
          s, &attempts);
      if (!r) return std::optional<BatchConsumer::Applied>();
      BatchConsumer::Applied applied;
      applied.on_committed = [&] { committed = true; };
      return std::optional<BatchConsumer::Applied>(std::move(applied));
    });
  });
  ASSERT_TRUE(WaitUntil([&] { return calls.load() >= 3; }, milliseconds(30000)));
  const auto start = std::chrono::steady_clock::now();
  stop.Request();
  thread.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10)) << "stop must be prompt";
  EXPECT_FALSE(committed.load());
  EXPECT_EQ(Committed(), 0);
  EXPECT_GE(consumer->Stats().apply_retries_total, 2u);
}

}  // namespace
}  // namespace belfry
