// Hermetic: librdkafka config building (no broker is contacted).
#include "kafka/kafka_client_config.h"

#include <gtest/gtest.h>

#include "kafka/command_publisher.h"
#include "kafka/kafka_trigger_sink.h"

namespace belfry {
namespace {

std::string Get(RdKafka::Conf& conf, const std::string& key) {
  std::string value;
  EXPECT_EQ(conf.get(key, value), RdKafka::Conf::CONF_OK) << key;
  return value;
}

TEST(BuildKafkaConfTest, SetsServersClientIdThenSettingsThenPassThrough) {
  KafkaConfig config;
  config.brokers = "127.0.0.1:1";
  config.properties = {{"linger.ms", "7"}, {"socket.keepalive.enable", "true"}};
  StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
      BuildKafkaConf(config, "unit-client", {{"linger.ms", "5"}, {"acks", "all"}});
  ASSERT_TRUE(conf.ok()) << conf.status().ToString();
  EXPECT_EQ(Get(**conf, "bootstrap.servers"), "127.0.0.1:1");
  EXPECT_EQ(Get(**conf, "client.id"), "unit-client");
  EXPECT_EQ(Get(**conf, "linger.ms"), "7");  // the pass-through map wins
  EXPECT_EQ(Get(**conf, "acks"), "-1");
  EXPECT_EQ(Get(**conf, "socket.keepalive.enable"), "true");
}

TEST(BuildKafkaConfTest, UnknownPropertyIsInvalidAndNamesTheKey) {
  KafkaConfig config;
  config.properties = {{"no.such.property", "secret-value"}};
  StatusOr<std::unique_ptr<RdKafka::Conf>> conf = BuildKafkaConf(config, "c", {});
  ASSERT_FALSE(conf.ok());
  EXPECT_EQ(conf.status().code(), Status::Code::kInvalid);
  EXPECT_NE(conf.status().message().find("no.such.property"), std::string::npos);
  EXPECT_EQ(conf.status().message().find("secret-value"), std::string::npos) << "values may be secrets";
}

TEST(BuildKafkaConfTest, BadValueIsInvalidAndNamesTheKey) {
  KafkaConfig config;
  config.properties = {{"linger.ms", "not-a-number"}};
  StatusOr<RdKafkaConfPtr> conf = BuildKafkaCConf(config, "c", {});
  ASSERT_FALSE(conf.ok());
  EXPECT_NE(conf.status().message().find("linger.ms"), std::string::npos);
}

TEST(BuildKafkaConfTest, ClientsRefuseABadPassThroughProperty) {
  KafkaConfig config;
  config.properties = {{"no.such.property", "x"}};
  StatusOr<std::unique_ptr<KafkaTriggerSink>> sink = KafkaTriggerSink::Create(config);
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find("no.such.property"), std::string::npos);
  StatusOr<std::unique_ptr<CommandPublisher>> publisher = CommandPublisher::Create(config);
  ASSERT_FALSE(publisher.ok());
  EXPECT_NE(publisher.status().message().find("no.such.property"), std::string::npos);
}

}  // namespace
}  // namespace belfry

namespace belfry {
namespace {

TEST(GroupInstanceIdTest, FromTheNodeIdWithKafkasCharactersOnly) {
  EXPECT_EQ(GroupInstanceId("node-a", "commands"), "node-a-commands");
  EXPECT_EQ(GroupInstanceId("web 1/eu:west", "executions"), "web_1_eu_west-executions");
  EXPECT_EQ(GroupInstanceId("", "commands"), "") << "no configured node id: dynamic membership";
  EXPECT_EQ(GroupInstanceId(std::string(300, 'n'), "commands").size(), 249u);
}

}  // namespace
}  // namespace belfry
