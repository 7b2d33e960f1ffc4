#include "core/topic_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace belfry {
namespace {

TEST(KafkaTopicNameTest, Valid) {
  EXPECT_TRUE(IsValidKafkaTopicName("tracking.poll"));
  EXPECT_TRUE(IsValidKafkaTopicName("a"));
  EXPECT_TRUE(IsValidKafkaTopicName("A-z_0.9"));
  EXPECT_TRUE(IsValidKafkaTopicName("..."));
  EXPECT_TRUE(IsValidKafkaTopicName(std::string(249, 't')));
}

TEST(KafkaTopicNameTest, Invalid) {
  EXPECT_FALSE(IsValidKafkaTopicName(""));
  EXPECT_FALSE(IsValidKafkaTopicName("."));
  EXPECT_FALSE(IsValidKafkaTopicName(".."));
  EXPECT_FALSE(IsValidKafkaTopicName(std::string(250, 't')));
  for (const char* bad : {"a b", "a/b", "a:b", "a*", "a\nb", "tracking,poll", "caf\xc3\xa9", "a+b"}) {
    EXPECT_FALSE(IsValidKafkaTopicName(bad)) << bad;
  }
  EXPECT_FALSE(IsValidKafkaTopicName(std::string_view("a\0b", 3)));
}

TEST(GlobMatchTest, Literal) {
  EXPECT_TRUE(GlobMatch("tracking.poll", "tracking.poll"));
  EXPECT_FALSE(GlobMatch("tracking.poll", "tracking.polls"));
  EXPECT_FALSE(GlobMatch("tracking.poll", "tracking.pol"));
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "a"));
}

TEST(GlobMatchTest, Star) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "anything.at-all"));
  EXPECT_TRUE(GlobMatch("tracking.*", "tracking."));
  EXPECT_TRUE(GlobMatch("tracking.*", "tracking.poll.v2"));
  EXPECT_FALSE(GlobMatch("tracking.*", "tracking"));
  EXPECT_TRUE(GlobMatch("*.poll", "tracking.poll"));
  EXPECT_FALSE(GlobMatch("*.poll", "tracking.poll.dlq"));
  EXPECT_TRUE(GlobMatch("a*b*c", "abc"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXbYbZ"));
  EXPECT_TRUE(GlobMatch("**", "x"));
  EXPECT_TRUE(GlobMatch("*a*a*a*a*b", std::string(40, 'a') + "b"));
  EXPECT_FALSE(GlobMatch("*a*a*a*a*b", std::string(2000, 'a')));  // no exponential blow-up
}

TEST(GlobMatchTest, OnlyStarIsSpecial) {
  EXPECT_FALSE(GlobMatch("tracking.?", "tracking.a"));
  EXPECT_TRUE(GlobMatch("tracking.?", "tracking.?"));
  EXPECT_FALSE(GlobMatch("[ab]", "a"));
}

class TopicPolicyTest : public ::testing::Test {
 protected:
  TopicPolicy policy_{{"tracking.*", "eta.recompute", "*.triggers"},
                      {"belfry.commands", "belfry.commands.dlq", "belfry.command-results"}};
};

TEST_F(TopicPolicyTest, AllowsListedTopics) {
  EXPECT_TRUE(policy_.Check("tracking.poll").ok());
  EXPECT_TRUE(policy_.Check("eta.recompute").ok());
  EXPECT_TRUE(policy_.Check("billing.triggers").ok());
}

TEST_F(TopicPolicyTest, RefusesTopicsOutsideTheAllowlist) {
  const Status s = policy_.Check("billing.charge");
  EXPECT_EQ(s.code(), Status::Code::kInvalid);
  EXPECT_EQ(s.reason(), "forbidden_topic");
  EXPECT_NE(s.message().find("allowlist"), std::string::npos);
  EXPECT_NE(s.message().find("\"billing.charge\""), std::string::npos);
  EXPECT_EQ(policy_.Check("eta.recompute2").reason(), "forbidden_topic");
}

TEST_F(TopicPolicyTest, AlwaysRefusesReservedAndInternalTopics) {
  const TopicPolicy open({"*"}, {"belfry.commands", "belfry.commands.dlq", "belfry.command-results"});
  for (const char* t : {"belfry.commands", "belfry.commands.dlq", "belfry.command-results",
                        "__consumer_offsets", "__transaction_state", "__"}) {
    EXPECT_EQ(open.Check(t).reason(), "forbidden_topic") << t;
  }
  EXPECT_TRUE(open.Check("belfry.commands.v2").ok());
  EXPECT_TRUE(open.Check("_single_underscore").ok());
}

TEST_F(TopicPolicyTest, InvalidNamesComeFirst) {
  EXPECT_EQ(policy_.Check("").reason(), "invalid_topic");
  EXPECT_EQ(policy_.Check("tracking poll").reason(), "invalid_topic");
  EXPECT_EQ(policy_.Check(std::string(250, 'x')).reason(), "invalid_topic");
  EXPECT_EQ(policy_.Check("__bad topic").reason(), "invalid_topic");
}

TEST_F(TopicPolicyTest, MessagesEscapeAndTruncateTheTopic) {
  const Status s = policy_.Check(std::string("a\x01\"b\xff", 5));
  EXPECT_NE(s.message().find(R"("a\x01\x22b\xff")"), std::string::npos) << s.message();
  const Status long_topic = policy_.Check(std::string(5000, 'x'));
  EXPECT_NE(long_topic.message().find("... (5000 bytes)"), std::string::npos) << long_topic.message();
  EXPECT_LT(long_topic.message().size(), 300u);
}

TEST(TopicPolicyEmptyAllowlistTest, RefusesEverything) {
  const TopicPolicy none({}, {});
  EXPECT_EQ(none.Check("tracking.poll").reason(), "forbidden_topic");
}

}  // namespace
}  // namespace belfry
