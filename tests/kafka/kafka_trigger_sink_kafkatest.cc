// Integration: KafkaTriggerSink and TopicTail against the real broker.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kafka/kafka_test_util.h"
#include "kafka/kafka_trigger_sink.h"
#include "kafka/topic_admin.h"
#include "kafka/topic_tail.h"

namespace belfry {
namespace {

using belfry::testing::TestKafkaConfig;
using belfry::testing::UniqueName;
using belfry::testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr EpochMs kSlotA = 1795786652500;   // 2026-11-27T13:37:32.500Z
constexpr EpochMs kSlotB = kSlotA + 60000;  // 2026-11-27T13:38:32.500Z

struct OwnedTrigger {
  std::string job_id, topic, key, details;
  int32_t interval = 15;
  EpochMs scheduled_for = kSlotA;
  TriggerView view() const { return TriggerView{job_id, topic, key, details, interval, scheduled_for}; }
};

OwnedTrigger MakeTrigger(const std::string& topic, int i) {
  return OwnedTrigger{"job-" + std::to_string(i),
                      topic,
                      "shipment-" + std::to_string(i),
                      "{\"shipmentId\":" + std::to_string(i) + ",\"carrier\":\"acme\"}",
                      15,
                      i % 2 == 0 ? kSlotA : kSlotB};
}

std::unique_ptr<KafkaTriggerSink> NewSink(const KafkaConfig& config, KafkaTriggerSinkOptions options = {}) {
  StatusOr<std::unique_ptr<KafkaTriggerSink>> sink = KafkaTriggerSink::Create(config, std::move(options));
  EXPECT_TRUE(sink.ok()) << sink.status().ToString();
  return sink.ok() ? std::move(sink.value()) : nullptr;
}

std::vector<TailRecord> ReadAll(const KafkaConfig& config, const std::string& topic, size_t want,
                                seconds timeout) {
  TopicTailOptions options;
  options.from_beginning = true;
  StatusOr<std::unique_ptr<TopicTail>> tail = TopicTail::Create(config, {topic}, options);
  EXPECT_TRUE(tail.ok()) << tail.status().ToString();
  std::vector<TailRecord> out;
  if (!tail.ok()) return out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < want && std::chrono::steady_clock::now() < deadline) {
    (*tail)->Poll(milliseconds(200), [&](const TailRecord& r) { out.push_back(r); });
  }
  (*tail)->Poll(milliseconds(300), [&](const TailRecord& r) { out.push_back(r); });  // nothing extra
  return out;
}

TEST(KafkaTriggerSinkTest, Delivers10000TriggersAndTailReadsThemBack) {
  const KafkaConfig config = TestKafkaConfig();
  const std::string topic = UniqueName("kt.triggers");
  ASSERT_TRUE(EnsureTopics(config, {TopicSpec{topic, 4, -1, {}}}).ok());

  std::atomic<int> delivered_hook{0};
  std::atomic<int64_t> slot_sum{0};
  KafkaTriggerSinkOptions options;
  options.on_delivered = [&](EpochMs scheduled_for) {
    delivered_hook.fetch_add(1);
    slot_sum.fetch_add(scheduled_for - kSlotA);
  };
  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config, options);
  ASSERT_NE(sink, nullptr);

  constexpr int kN = 10000;
  std::vector<OwnedTrigger> triggers;
  for (int i = 0; i < kN; ++i) triggers.push_back(MakeTrigger(topic, i));

  {
    // Warm up (connection, producer id, the topic's metadata: librdkafka 2.0 learns a topic it
    // has not produced to on its 1 s metadata timer), so the figure below is steady-state.
    OwnedTrigger warmup = MakeTrigger(topic, 0);
    warmup.job_id = "warmup";
    std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
    batch->Add(warmup.view());
    ASSERT_TRUE(batch->Finish().ok());
  }
  delivered_hook = 0;
  slot_sum = 0;

  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
  for (const OwnedTrigger& t : triggers) batch->Add(t.view());
  const Status finished = batch->Finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(finished.ok()) << finished.ToString();
  std::printf("[ info ] KafkaTriggerSink: %d triggers acknowledged in %.3f s = %.0f msgs/s\n", kN, secs,
              kN / secs);
  ::testing::Test::RecordProperty("sink_msgs_per_sec", static_cast<int>(kN / secs));
  EXPECT_EQ(sink->triggers_sent_total(), static_cast<uint64_t>(kN + 1));
  EXPECT_EQ(sink->triggers_failed_total(), 0u);
  // outq_len also counts in-flight protocol requests, so it settles to 0 shortly after.
  EXPECT_TRUE(WaitUntil([&] { return sink->queue_length() == 0; }, milliseconds(5000)));
  EXPECT_EQ(delivered_hook.load(), kN);
  EXPECT_EQ(slot_sum.load(), int64_t{60000} * (kN / 2));

  const std::vector<TailRecord> records = ReadAll(config, topic, kN + 1, seconds(60));
  ASSERT_EQ(records.size(), static_cast<size_t>(kN + 1));
  std::set<std::string> seen;
  for (const TailRecord& r : records) {
    ASSERT_TRUE(r.key.has_value());
    ASSERT_TRUE(r.value.has_value());
    const nlohmann::json v = nlohmann::json::parse(*r.value);
    const std::string job_id = v.at("jobId").get<std::string>();
    if (job_id == "warmup") continue;
    const int i = std::stoi(job_id.substr(4));
    EXPECT_EQ(*r.key, "shipment-" + std::to_string(i));
    EXPECT_EQ(r.headers.at("belfry-job-id"), job_id);
    const EpochMs slot = i % 2 == 0 ? kSlotA : kSlotB;
    EXPECT_EQ(r.headers.at("belfry-scheduled-for"), std::to_string(slot));
    EXPECT_EQ(v.at("scheduledFor"), i % 2 == 0 ? "2026-11-27T13:37:32.500Z" : "2026-11-27T13:38:32.500Z");
    EXPECT_EQ(v.at("intervalMinutes"), 15);
    EXPECT_EQ(v.at("jobDetails"), nlohmann::json({{"shipmentId", i}, {"carrier", "acme"}}));
    EXPECT_TRUE(seen.insert(job_id).second) << "duplicate " << job_id;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kN));
}

TEST(KafkaTriggerSinkTest, InvalidTopicFailsTheBatchWithoutHangingOrDroppingTheRest) {
  const KafkaConfig config = TestKafkaConfig();
  const std::string good_topic = UniqueName("kt.triggers");
  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config);
  ASSERT_NE(sink, nullptr);

  OwnedTrigger bad = MakeTrigger("bad topic!", 1);
  OwnedTrigger good = MakeTrigger(good_topic, 2);
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
  batch->Add(bad.view());
  batch->Add(good.view());
  const Status s = batch->Finish();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalid);
  EXPECT_EQ(s.reason(), "invalid_topic");
  EXPECT_NE(s.message().find("bad topic!"), std::string::npos);
  EXPECT_EQ(sink->triggers_sent_total(), 1u);
  EXPECT_EQ(sink->triggers_failed_total(), 1u);
}

TEST(KafkaTriggerSinkTest, OversizedTriggerIsAPermanentFailure) {
  const KafkaConfig config = TestKafkaConfig();
  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config);
  ASSERT_NE(sink, nullptr);
  OwnedTrigger huge = MakeTrigger(UniqueName("kt.triggers"), 1);
  huge.details = "{\"blob\":\"" + std::string(2 * 1024 * 1024, 'x') + "\"}";
  std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
  batch->Add(huge.view());
  const Status s = batch->Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalid) << s.ToString();
  EXPECT_EQ(sink->triggers_failed_total(), 1u);
}

// Issue 33: a topic that refuses one trigger for its size (the broker's max.message.bytes) fails
// that trigger alone, as a record error, and reports it as it was produced, so that it can be
// sent again (Resend) or dead-lettered; the same batch's other triggers are delivered.
TEST(KafkaTriggerSinkTest, ARefusedTriggerIsListedAsARecordErrorWithItsMessage) {
  const KafkaConfig config = TestKafkaConfig();
  const std::string small = UniqueName("kt.small");
  const std::string fine = UniqueName("kt.triggers");
  ASSERT_TRUE(EnsureTopics(config, {TopicSpec{small, 1, -1, {{"max.message.bytes", "100"}}},
                                    TopicSpec{fine, 1, -1, {}}})
                  .ok());
  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config);
  ASSERT_NE(sink, nullptr);
  OwnedTrigger bad = MakeTrigger(small, 1);
  bad.details = "{\"pad\":\"" + std::string(300, 'x') + "\"}";
  std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
  batch->Add(bad.view());
  for (int i = 2; i < 12; ++i) batch->Add(MakeTrigger(fine, i).view());
  ASSERT_FALSE(batch->Finish().ok());
  const std::vector<TriggerFailure> failures = batch->Failures();
  ASSERT_EQ(failures.size(), 1u);
  const TriggerFailure& f = failures[0];
  EXPECT_EQ(f.kind, TriggerErrorKind::kRecord) << f.error;
  EXPECT_EQ(f.reason, "message_too_large") << f.error;
  EXPECT_EQ(f.job_id, bad.job_id);
  EXPECT_EQ(f.topic, small);
  EXPECT_EQ(f.key, bad.key);
  EXPECT_EQ(f.scheduled_for_ms, bad.scheduled_for);
  EXPECT_NE(f.value.find(std::string(300, 'x')), std::string::npos);
  EXPECT_EQ(ReadAll(config, fine, 10, seconds(30)).size(), 10u) << "the batch-mates were delivered";

  // The same bytes to a topic that takes them: delivered, with the trigger's headers.
  TriggerFailure elsewhere = f;
  elsewhere.topic = fine;
  std::unique_ptr<TriggerBatch> again = sink->NewBatch();
  again->Resend(elsewhere);
  ASSERT_TRUE(again->Finish().ok());
  EXPECT_TRUE(again->Failures().empty());
  const std::vector<TailRecord> records = ReadAll(config, fine, 11, seconds(30));
  ASSERT_EQ(records.size(), 11u);
  bool found = false;
  for (const TailRecord& r : records) {
    if (r.headers.count("belfry-job-id") && r.headers.at("belfry-job-id") == bad.job_id) {
      found = true;
      EXPECT_EQ(r.value, f.value);
      EXPECT_EQ(r.headers.at("belfry-scheduled-for"), std::to_string(bad.scheduled_for));
    }
  }
  EXPECT_TRUE(found);
}

TEST(KafkaTriggerSinkTest, FullQueueBlocksInsteadOfDropping) {
  const KafkaConfig config = TestKafkaConfig();
  const std::string topic = UniqueName("kt.triggers");
  KafkaTriggerSinkOptions options;
  options.queue_max_messages = 200;
  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config, options);
  ASSERT_NE(sink, nullptr);
  constexpr int kN = 5000;
  std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
  for (int i = 0; i < kN; ++i) batch->Add(MakeTrigger(topic, i).view());
  const Status s = batch->Finish();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(sink->triggers_sent_total(), static_cast<uint64_t>(kN));
  EXPECT_EQ(ReadAll(config, topic, kN, seconds(60)).size(), static_cast<size_t>(kN));
}

TEST(KafkaTriggerSinkTest, ConcurrentBatchesAndAnAbandonedBatch) {
  const KafkaConfig config = TestKafkaConfig();
  const std::string topic = UniqueName("kt.triggers");
  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config);
  ASSERT_NE(sink, nullptr);
  {
    // Destroyed without Finish(): its deliveries still complete safely.
    std::unique_ptr<TriggerBatch> abandoned = sink->NewBatch();
    for (int i = 0; i < 1000; ++i) abandoned->Add(MakeTrigger(topic, i).view());
  }
  std::vector<std::thread> workers;
  std::atomic<int> ok_batches{0};
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
      for (int i = 0; i < 500; ++i) batch->Add(MakeTrigger(topic, 1000 + w * 500 + i).view());
      if (batch->Finish().ok()) ok_batches.fetch_add(1);
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(ok_batches.load(), 4);
  EXPECT_TRUE(WaitUntil([&] { return sink->triggers_sent_total() == 3000; }, milliseconds(30000)));
}

TEST(KafkaTriggerSinkTest, ReplacesTheProducerAfterAFatalError) {
  const KafkaConfig config = TestKafkaConfig();
  const std::string topic = UniqueName("kt.triggers");
  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config);
  ASSERT_NE(sink, nullptr);
  {
    std::unique_ptr<TriggerBatch> warmup = sink->NewBatch();
    warmup->Add(MakeTrigger(topic, 0).view());
    ASSERT_TRUE(warmup->Finish().ok());
  }
  sink->InjectFatalErrorForTesting();
  ASSERT_TRUE(WaitUntil([&] { return sink->producer_restarts_total() == 1; }, milliseconds(10000)));
  std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
  for (int i = 1; i <= 100; ++i) batch->Add(MakeTrigger(topic, i).view());
  const Status s = batch->Finish();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ReadAll(config, topic, 101, seconds(60)).size(), 101u);
}

TEST(TopicTailTest, PicksUpATopicCreatedAfterSubscribing) {
  const KafkaConfig config = TestKafkaConfig();
  const std::string topic = UniqueName("kt.late");
  TopicTailOptions options;
  options.from_beginning = true;
  StatusOr<std::unique_ptr<TopicTail>> tail = TopicTail::Create(config, {topic}, options);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ((*tail)->Poll(milliseconds(500), nullptr), 0u);

  std::unique_ptr<KafkaTriggerSink> sink = NewSink(config);  // the producer auto-creates the topic
  ASSERT_NE(sink, nullptr);
  std::unique_ptr<TriggerBatch> batch = sink->NewBatch();
  for (int i = 0; i < 10; ++i) batch->Add(MakeTrigger(topic, i).view());
  ASSERT_TRUE(batch->Finish().ok());

  std::map<std::string, std::string> by_key;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (by_key.size() < 10 && std::chrono::steady_clock::now() < deadline) {
    (*tail)->Poll(milliseconds(200), [&](const TailRecord& r) {
      EXPECT_EQ(r.topic, topic);
      EXPECT_GE(r.partition, 0);
      EXPECT_GE(r.offset, 0);
      EXPECT_GT(r.timestamp_ms, 0);
      by_key[r.key.value_or("")] = r.headers.at("belfry-job-id");
    });
  }
  ASSERT_EQ(by_key.size(), 10u);
  EXPECT_EQ(by_key["shipment-3"], "job-3");
  EXPECT_GT((*tail)->assigned_partitions(), 0u);
}

}  // namespace
}  // namespace belfry
