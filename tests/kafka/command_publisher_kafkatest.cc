// CommandPublisher::PublishAll against the real broker: every record is acknowledged and read back,
// and each key's records keep their order (the change publisher's contract, docs/audit-trail.md).
#include "kafka/command_publisher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kafka/topic_admin.h"
#include "kafka/topic_tail.h"
#include "kafka_test_util.h"

namespace belfry {
namespace {

using testing::TestKafkaConfig;
using testing::WaitUntil;

TEST(CommandPublisherTest, PublishAllDeliversEveryRecordInOrderPerKey) {
  KafkaConfig config = TestKafkaConfig();
  ASSERT_TRUE(EnsureTopics(config, {TopicSpec{config.changes_topic, 3, -1, {{"cleanup.policy", "compact"}}}}).ok());
  CommandPublisherOptions options;
  options.topic = config.changes_topic;
  StatusOr<std::unique_ptr<CommandPublisher>> publisher = CommandPublisher::Create(config, options);
  ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();
  std::vector<std::pair<std::string, std::string>> records;
  for (int i = 0; i < 600; ++i) records.emplace_back("job-" + std::to_string(i % 7), std::to_string(i));
  const Status st = (*publisher)->PublishAll(records);
  ASSERT_TRUE(st.ok()) << st.ToString();

  TopicTailOptions tail_options;
  tail_options.from_beginning = true;
  StatusOr<std::unique_ptr<TopicTail>> tail = TopicTail::Create(config, {config.changes_topic}, tail_options);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  std::map<std::string, std::vector<int>> by_key;
  size_t seen = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        (*tail)->Poll(std::chrono::milliseconds(200), [&](const TailRecord& r) {
          by_key[r.key.value_or("")].push_back(std::stoi(r.value.value_or("-1")));
          ++seen;
        });
        return seen >= records.size();
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(seen, records.size());
  ASSERT_EQ(by_key.size(), 7u);
  for (const auto& [key, values] : by_key) {
    for (size_t k = 1; k < values.size(); ++k) EXPECT_EQ(values[k], values[k - 1] + 7) << key;
  }
}

}  // namespace
}  // namespace belfry
