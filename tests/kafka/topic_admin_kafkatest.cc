// Integration: EnsureTopics against the real broker.
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <cstdlib>
#include <memory>

#include "kafka/kafka_test_util.h"
#include "kafka/topic_admin.h"

namespace belfry {
namespace {

using belfry::testing::TestKafkaConfig;
using belfry::testing::UniqueName;

// Partition count of `topic` per the broker's metadata; -1 if it does not exist.
int PartitionCount(const std::string& topic) {
  std::string errstr;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", std::getenv("BELFRY_KAFKA_BROKERS"), errstr);
  conf->set("allow.auto.create.topics", "false", errstr);
  std::unique_ptr<RdKafka::Producer> p(RdKafka::Producer::create(conf.get(), errstr));
  RdKafka::Metadata* raw = nullptr;
  if (p->metadata(true, nullptr, &raw, 10000) != RdKafka::ERR_NO_ERROR) return -2;
  std::unique_ptr<RdKafka::Metadata> md(raw);
  for (const RdKafka::TopicMetadata* t : *md->topics()) {
    if (t->topic() == topic) return static_cast<int>(t->partitions()->size());
  }
  return -1;
}

TEST(EnsureTopicsTest, CreatesThenIsIdempotent) {
  const KafkaConfig config = TestKafkaConfig();
  const std::vector<TopicSpec> specs = {
      TopicSpec{UniqueName("kt.admin"), 12, -1, {}},
      TopicSpec{UniqueName("kt.admin"), 3, 1, {{"cleanup.policy", "compact"}}},
  };
  ASSERT_EQ(PartitionCount(specs[0].name), -1);
  const Status first = EnsureTopics(config, specs);
  ASSERT_TRUE(first.ok()) << first.ToString();
  EXPECT_EQ(PartitionCount(specs[0].name), 12);
  EXPECT_EQ(PartitionCount(specs[1].name), 3);

  const Status again = EnsureTopics(config, specs);
  EXPECT_TRUE(again.ok()) << again.ToString();
  // An existing topic is left alone, even if the spec now asks for more partitions.
  EXPECT_TRUE(EnsureTopics(config, {TopicSpec{specs[1].name, 6, -1, {}}}).ok());
  EXPECT_EQ(PartitionCount(specs[1].name), 3);
}

TEST(EnsureTopicsTest, BelfryTopicSpecsCreateAllFive) {
  KafkaConfig config = TestKafkaConfig();
  config.triggers_dlq_topic = UniqueName("kt.triggers.dlq");
  const std::vector<TopicSpec> specs = BelfryTopicSpecs(config);
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[4].name, config.triggers_dlq_topic);
  EXPECT_EQ(specs[0].name, config.commands_topic);
  EXPECT_EQ(specs[0].partitions, 12);
  EXPECT_EQ(specs[3].name, config.changes_topic);
  EXPECT_EQ(specs[3].configs, (std::map<std::string, std::string>{{"cleanup.policy", "compact"}}))
      << "the audit trail's events are compacted by job";
  ASSERT_TRUE(EnsureTopics(config, specs).ok());
  ASSERT_TRUE(EnsureTopics(config, specs).ok());
  EXPECT_EQ(PartitionCount(config.commands_topic), 12);
  EXPECT_GT(PartitionCount(config.dlq_topic), 0);
  EXPECT_GT(PartitionCount(config.results_topic), 0);
  EXPECT_EQ(PartitionCount(config.changes_topic), 6);
  EXPECT_EQ(PartitionCount(config.triggers_dlq_topic), 3);
}

TEST(EnsureTopicsTest, InvalidSpecsAreInvalid) {
  const KafkaConfig config = TestKafkaConfig();
  const Status bad_name = EnsureTopics(config, {TopicSpec{"bad topic!", 1, -1, {}}});
  EXPECT_EQ(bad_name.code(), Status::Code::kInvalid) << bad_name.ToString();
  const Status bad_config =
      EnsureTopics(config, {TopicSpec{UniqueName("kt.admin"), 1, -1, {{"cleanup.policy", "sometimes"}}}});
  EXPECT_EQ(bad_config.code(), Status::Code::kInvalid) << bad_config.ToString();
}

TEST(EnsureTopicsTest, UnreachableBrokerIsRetryable) {
  KafkaConfig config = TestKafkaConfig();
  config.brokers = "127.0.0.1:1";
  const Status s = EnsureTopics(config, {TopicSpec{UniqueName("kt.admin"), 1, -1, {}}}, 2000);
  EXPECT_TRUE(s.retryable()) << s.ToString();
}

}  // namespace
}  // namespace belfry
