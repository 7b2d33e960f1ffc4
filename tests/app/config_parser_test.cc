#include "app/config_parser.h"

#include <gtest/gtest.h>

#include <map>

namespace belfry {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ConfigParserTest, DefaultsMatchTheDesign) {
  auto c = ParseConfig("", Env({}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->scheduler.shard_count, 120);
  EXPECT_EQ(c->scheduler.tick_ms, 500);
  EXPECT_EQ(c->scheduler.intervals.size(), 16u);
  EXPECT_EQ(c->scheduler.misfire_policy, MisfirePolicy::kFireAll);
  EXPECT_EQ(c->scheduler.max_catchup_ms, 15 * 60'000);
  EXPECT_EQ(c->kafka.commands_topic, "belfry.commands");
  EXPECT_EQ(c->admin.listen, "127.0.0.1:8080");
  EXPECT_EQ(c->commands.max_details_bytes, 65536);
}

TEST(ConfigParserTest, FullYaml) {
  auto c = ParseConfig(R"(
database_url: postgresql://x@db/belfry?sslmode=require
kafka:
  brokers: k1:9092,k2:9092
  command_batch_wait: 20ms
  properties:
    security.protocol: SASL_SSL
    sasl.mechanism: PLAIN
scheduler:
  shard_count: 60
  tick: 1s
  intervals: [1, 5, 60]
  misfire_policy: coalesce
  max_catchup: 1h
commands:
  allowed_topics: ["tracking.*", "eta.*"]
log:
  format: json
)",
                       Env({}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->database_url, "postgresql://x@db/belfry?sslmode=require");
  EXPECT_EQ(c->kafka.brokers, "k1:9092,k2:9092");
  EXPECT_EQ(c->kafka.command_batch_wait_ms, 20);
  EXPECT_EQ(c->kafka.properties.at("security.protocol"), "SASL_SSL");
  EXPECT_EQ(c->scheduler.shard_count, 60);
  EXPECT_EQ(c->scheduler.tick_ms, 1000);
  EXPECT_EQ(c->scheduler.intervals, (std::vector<int32_t>{1, 5, 60}));
  EXPECT_EQ(c->scheduler.misfire_policy, MisfirePolicy::kCoalesce);
  EXPECT_EQ(c->scheduler.max_catchup_ms, 3'600'000);
  EXPECT_EQ(c->commands.allowed_topics, (std::vector<std::string>{"tracking.*", "eta.*"}));
  EXPECT_EQ(c->log.format, "json");
}

TEST(ConfigParserTest, EnvironmentOverridesYaml) {
  auto c = ParseConfig("kafka:\n  brokers: a:1\n",
                       Env({{"BELFRY_KAFKA_BROKERS", "b:2"},
                            {"BELFRY_DATABASE_URL", "postgresql://env"},
                            {"BELFRY_SCHEDULER_TICK", "250ms"},
                            {"BELFRY_SCHEDULER_SHARD_COUNT", "240"},
                            {"BELFRY_COMMANDS_ALLOWED_TOPICS", "a.*, b.*"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kafka.brokers, "b:2");
  EXPECT_EQ(c->database_url, "postgresql://env");
  EXPECT_EQ(c->scheduler.tick_ms, 250);
  EXPECT_EQ(c->scheduler.shard_count, 240);
  EXPECT_EQ(c->commands.allowed_topics, (std::vector<std::string>{"a.*", "b.*"}));
}

void ExpectError(const std::string& yaml, const std::string& needle, std::map<std::string, std::string> env = {}) {
  auto c = ParseConfig(yaml, Env(env));
  ASSERT_FALSE(c.ok()) << yaml;
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
}

TEST(ConfigParserTest, ErrorsNameTheKey) {
  ExpectError("kafka:\n  bokers: x\n", "kafka.bokers");
  ExpectError("bogus: 1\n", "'bogus': unknown key");
  ExpectError("scheduler:\n  tick: 500\n", "scheduler.tick");
  ExpectError("scheduler:\n  tick: 1s\n", "must equal 60s");
  ExpectError("scheduler:\n  intervals: [1, 7]\n", "7 does not divide 1440");
  ExpectError("scheduler:\n  intervals: [5, 5]\n", "listed twice");
  ExpectError("scheduler:\n  misfire_policy: later\n", "scheduler.misfire_policy");
  ExpectError("scheduler:\n  shard_count: abc\n", "scheduler.shard_count");
  ExpectError("scheduler: [1]\n", "scheduler");
  ExpectError("log:\n  format: xml\n", "log.format");
  ExpectError(": : :\n  - [\n", "not valid YAML");
  ExpectError("", "BELFRY_SCHEDULER_TICK", {{"BELFRY_SCHEDULER_TICK", "fast"}});
}

TEST(ConfigParserTest, Durations) {
  EXPECT_EQ(ParseDurationMs("500ms"), 500);
  EXPECT_EQ(ParseDurationMs("30s"), 30'000);
  EXPECT_EQ(ParseDurationMs("15m"), 900'000);
  EXPECT_EQ(ParseDurationMs("2h"), 7'200'000);
  EXPECT_EQ(ParseDurationMs("500"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("-1s"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("1.5s"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("s"), std::nullopt);
}

TEST(ConfigParserTest, ReadSideLimitsAndApiOnlyNodes) {
  auto c = ParseConfig(R"(
scheduler:
  enabled: false
admin:
  db_sessions: 8
  read_wait: 100ms
  statement_timeout: 5s
  worker_threads: 128
  max_queued_connections: 0
)",
                       Env({{"BELFRY_DATABASE_URL", "postgresql://x/y"}, {"BELFRY_KAFKA_BROKERS", "k:1"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->scheduler.enabled);
  EXPECT_EQ(c->admin.db_sessions, 8);
  EXPECT_EQ(c->admin.read_wait_ms, 100);
  EXPECT_EQ(c->admin.statement_timeout_ms, 5000);
  EXPECT_EQ(c->admin.worker_threads, 128);
  EXPECT_EQ(c->admin.max_queued_connections, 0);
  auto defaults = ParseConfig("", Env({{"BELFRY_DATABASE_URL", "postgresql://x/y"}, {"BELFRY_KAFKA_BROKERS", "k:1"}}));
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->scheduler.enabled);
  EXPECT_EQ(defaults->admin.db_sessions, 4);
  for (const char* bad : {"admin: {db_sessions: 0}", "admin: {read_wait: 0ms}", "admin: {statement_timeout: 1ms}",
                          "admin: {worker_threads: 0}", "admin: {max_queued_connections: -1}",
                          "scheduler: {enabled: maybe}"}) {
    auto r = ParseConfig(bad, Env({{"BELFRY_DATABASE_URL", "postgresql://x/y"}, {"BELFRY_KAFKA_BROKERS", "k:1"}}));
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(ConfigParserTest, ExecutionHistoryIsKeptByTime) {
  auto d = ParseConfig("", Env({}));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->executions.retention_ms, 7LL * 86'400'000);
  auto c = ParseConfig("executions:\n  retention: 30d\n", Env({}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->executions.retention_ms, 30LL * 86'400'000);
  auto short_retention = ParseConfig("executions:\n  retention: 12h\n", Env({}));
  ASSERT_FALSE(short_retention.ok());
  EXPECT_NE(short_retention.status().message().find("executions.retention"), std::string::npos);
  // The removed key fails loudly, naming its replacement, from YAML and from the environment.
  for (auto removed : {ParseConfig("executions:\n  keep_per_job: 100\n", Env({})),
                       ParseConfig("", Env({{"BELFRY_EXECUTIONS_KEEP_PER_JOB", "100"}}))}) {
    ASSERT_FALSE(removed.ok());
    EXPECT_NE(removed.status().message().find("executions.keep_per_job"), std::string::npos)
        << removed.status().message();
    EXPECT_NE(removed.status().message().find("executions.retention"), std::string::npos)
        << removed.status().message();
  }
}

TEST(ConfigParserTest, CatchUpRateAndChunk) {
  auto c = ParseConfig("", Env({}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->scheduler.catch_up_rate, 100'000);
  EXPECT_EQ(c->scheduler.catch_up_chunk_minutes, 1);
  c = ParseConfig("scheduler:\n  catch_up_rate: 0\n  catch_up_chunk_minutes: 5\n",
                  Env({{"BELFRY_SCHEDULER_CATCH_UP_RATE", "25000"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->scheduler.catch_up_rate, 25'000);
  EXPECT_EQ(c->scheduler.catch_up_chunk_minutes, 5);
  ExpectError("scheduler:\n  catch_up_rate: -1\n", "scheduler.catch_up_rate");
  ExpectError("scheduler:\n  catch_up_chunk_minutes: 0\n", "scheduler.catch_up_chunk_minutes");
  ExpectError("scheduler:\n  catch_up_chunk_minutes: 4294967297\n", "scheduler.catch_up_chunk_minutes");
}

}  // namespace
}  // namespace belfry
