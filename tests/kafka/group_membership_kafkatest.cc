// GroupMembership against the real broker: closing a consumer whose first assignment is waiting,
// unserved, in its queue. `belfry serve` does this when start-up fails right after the command or
// execution consumer has joined its group; a non-static member's close() then served the
// assignment, and rd_kafka_assign() inside the rebalance callback never returned (librdkafka
// 2.0.2, eager protocol: confluentinc/librdkafka#4884). shutdown_itest hung for 11 minutes on it.
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "kafka/group_membership.h"
#include "kafka/kafka_client_config.h"
#include "kafka/kafka_test_util.h"
#include "kafka/topic_admin.h"

namespace belfry {
namespace {

using std::chrono::milliseconds;
using testing::TestKafkaConfig;
using testing::UniqueName;

// Subscribes a fresh member to a fresh topic, lets `delay` pass, and closes it: a hung close is
// reported and ends the process, since its thread holds the consumer and cannot be abandoned.
void SubscribeThenCloseAfter(const std::string& instance_id, milliseconds delay) {
  KafkaConfig config = TestKafkaConfig();
  const std::string topic = UniqueName("kt.membership");
  ASSERT_TRUE(EnsureTopics(config, {TopicSpec{topic, 4, -1, {}}}).ok());
  KafkaSettings settings = {{"group.id", UniqueName("kt-membership")},
                            {"enable.auto.commit", "false"},
                            {"auto.offset.reset", "earliest"}};
  if (!instance_id.empty()) settings.emplace_back("group.instance.id", instance_id);
  auto conf = BuildKafkaConf(config, "membership-test", settings);
  ASSERT_TRUE(conf.ok()) << conf.status().ToString();
  GroupMembership membership("membership-test");
  std::string errstr;
  ASSERT_EQ(conf.value()->set("rebalance_cb", &membership, errstr), RdKafka::Conf::CONF_OK) << errstr;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(RdKafka::KafkaConsumer::create(conf.value().get(), errstr));
  ASSERT_NE(consumer, nullptr) << errstr;
  membership.Attach(consumer.get());
  ASSERT_EQ(consumer->subscribe({topic}), RdKafka::ERR_NO_ERROR);
  // Not a wait for an outcome: the delays sweep the moment of close() across the group join
  // (coordinator lookup, JoinGroup, SyncGroup: tens of milliseconds on the local broker), so that
  // some closes find the join in flight and the assignment arrives during close().
  std::this_thread::sleep_for(delay);

  auto closed = std::async(std::launch::async, [&] { membership.Close(); });
  if (closed.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    std::fprintf(stderr, "GroupMembership::Close() did not return within 30 s (instance id '%s', closed %lld ms "
                 "after subscribe)\n", instance_id.c_str(), static_cast<long long>(delay.count()));
    std::_Exit(1);
  }
  EXPECT_FALSE(membership.IsAssigned({topic, 0})) << "closed " << delay.count() << " ms after subscribe";
}

const milliseconds kDelays[] = {milliseconds(0),  milliseconds(1),  milliseconds(3),  milliseconds(6),
                                milliseconds(10), milliseconds(15), milliseconds(20), milliseconds(30),
                                milliseconds(45), milliseconds(70), milliseconds(100), milliseconds(300)};

TEST(GroupMembershipTest, ADynamicMemberClosesWhateverTheStateOfItsJoin) {
  for (milliseconds d : kDelays) SubscribeThenCloseAfter("", d);
}

TEST(GroupMembershipTest, AStaticMemberClosesWhateverTheStateOfItsJoin) {
  for (milliseconds d : kDelays) SubscribeThenCloseAfter(UniqueName("membership-node"), d);
}

}  // namespace
}  // namespace belfry
