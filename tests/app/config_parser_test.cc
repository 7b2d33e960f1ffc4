#include "app/config_parser.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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
  auto c = ParseConfig("kafka:\n  brokers: a:1\n", Env({{"BELFRY_KAFKA_BROKERS", "b:2"},
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

void ExpectError(const std::string& yaml, const std::string& needle,
                 std::map<std::string, std::string> env = {}) {
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
  auto defaults =
      ParseConfig("", Env({{"BELFRY_DATABASE_URL", "postgresql://x/y"}, {"BELFRY_KAFKA_BROKERS", "k:1"}}));
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->scheduler.enabled);
  EXPECT_EQ(defaults->admin.db_sessions, 4);
  for (const char* bad :
       {"admin: {db_sessions: 0}", "admin: {read_wait: 0ms}", "admin: {statement_timeout: 1ms}",
        "admin: {worker_threads: 0}", "admin: {max_queued_connections: -1}", "admin: {request_head_timeout: 10ms}",
        "admin: {max_connections: 0}", "admin: {max_connections_per_client: 0}", "scheduler: {enabled: maybe}"}) {
    auto r =
        ParseConfig(bad, Env({{"BELFRY_DATABASE_URL", "postgresql://x/y"}, {"BELFRY_KAFKA_BROKERS", "k:1"}}));
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(ConfigParserTest, StandbyIsOffByDefaultAndAdminReadsNeedItsUrl) {
  auto d = ParseConfig("", Env({}));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->standby.url.empty());
  EXPECT_FALSE(d->standby.admin_reads);
  EXPECT_EQ(d->standby.max_wait_ms, 50);
  auto bad = ParseConfig("standby: {admin_reads: true}", Env({}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("standby.admin_reads"), std::string::npos) << bad.status().message();
  auto good = ParseConfig("standby: {url: 'postgresql://s:5433/b', admin_reads: true, max_wait: 0ms}", Env({}));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_TRUE(good->standby.admin_reads);
  EXPECT_EQ(good->standby.max_wait_ms, 0);
  EXPECT_FALSE(ParseConfig("standby: {max_wait: 11s}", Env({})).ok());
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

// A YAML document setting each dotted path to its YAML value text.
std::string Yaml(const std::map<std::string, std::string>& values) {
  std::map<std::string, std::vector<std::string>> sections;  // "" = top level
  for (const auto& [path, value] : values) {
    const size_t dot = path.find('.');
    if (dot == std::string::npos) {
      sections[""].push_back(path + ": " + value);
    } else {
      sections[path.substr(0, dot)].push_back("  " + path.substr(dot + 1) + ": " + value);
    }
  }
  std::string out;
  for (const auto& [section, lines] : sections) {
    if (!section.empty()) out += section + ":\n";
    for (const std::string& line : lines) out += line + "\n";
  }
  return out;
}

std::string EnvVar(const std::string& path) {
  for (const ConfigKey& k : ConfigKeys()) {
    if (k.path == path) return k.env_var;
  }
  ADD_FAILURE() << "no key " << path;
  return "";
}

// README: BELFRY_<PATH>, the dotted key upper-cased with '.' -> '_'.
std::string ExpectedEnvVar(const std::string& path) {
  std::string name = "BELFRY_";
  for (char ch : path) name += ch == '.' ? '_' : static_cast<char>(std::toupper(ch));
  return name;
}

// One non-default valid value per key.
struct KeyCase {
  std::string yaml;  // the value as YAML
  std::string env;   // the value as an environment variable
  std::function<void(const Config&)> expect;
  std::map<std::string, std::string> also = {};  // other keys the value needs (path -> env/YAML text)
};

std::map<std::string, KeyCase> KeyCases() {
  return {
      {"database_url",
       {"postgresql://y/z", "postgresql://y/z",
        [](const Config& c) { EXPECT_EQ(c.database_url, "postgresql://y/z"); }}},
      {"node_id", {"node-7", "node-7", [](const Config& c) { EXPECT_EQ(c.node_id, "node-7"); }}},
      {"migrations_dir",
       {"/opt/m", "/opt/m", [](const Config& c) { EXPECT_EQ(c.migrations_dir, "/opt/m"); }}},
      {"kafka.brokers", {"k9:1", "k9:1", [](const Config& c) { EXPECT_EQ(c.kafka.brokers, "k9:1"); }}},
      {"kafka.commands_topic",
       {"c.t", "c.t", [](const Config& c) { EXPECT_EQ(c.kafka.commands_topic, "c.t"); }}},
      {"kafka.dlq_topic", {"d.t", "d.t", [](const Config& c) { EXPECT_EQ(c.kafka.dlq_topic, "d.t"); }}},
      {"kafka.results_topic",
       {"r.t", "r.t", [](const Config& c) { EXPECT_EQ(c.kafka.results_topic, "r.t"); }}},
      {"kafka.changes_topic",
       {"c.t", "c.t", [](const Config& c) { EXPECT_EQ(c.kafka.changes_topic, "c.t"); }}},
      {"kafka.executions_topic",
       {"e.t", "e.t", [](const Config& c) { EXPECT_EQ(c.kafka.executions_topic, "e.t"); }}},
      {"kafka.executions_dlq_topic",
       {"ed.t", "ed.t", [](const Config& c) { EXPECT_EQ(c.kafka.executions_dlq_topic, "ed.t"); }}},
      {"kafka.triggers_dlq_topic",
       {"td.t", "td.t", [](const Config& c) { EXPECT_EQ(c.kafka.triggers_dlq_topic, "td.t"); }}},
      {"kafka.executions_group_id",
       {"eg", "eg", [](const Config& c) { EXPECT_EQ(c.kafka.executions_group_id, "eg"); }}},
      {"kafka.group_id", {"g", "g", [](const Config& c) { EXPECT_EQ(c.kafka.group_id, "g"); }}},
      {"kafka.command_batch_max",
       {"777", "777", [](const Config& c) { EXPECT_EQ(c.kafka.command_batch_max, 777); }}},
      {"kafka.command_batch_wait",
       {"2s", "2s", [](const Config& c) { EXPECT_EQ(c.kafka.command_batch_wait_ms, 2000); }}},
      {"kafka.properties",
       {"{linger.ms: \"5\"}", "",
        [](const Config& c) {
          EXPECT_EQ(c.kafka.properties, (std::map<std::string, std::string>{{"linger.ms", "5"}}));
        }}},
      {"scheduler.enabled", {"false", "false", [](const Config& c) { EXPECT_FALSE(c.scheduler.enabled); }}},
      {"scheduler.shard_count",
       {"240",
        "240",
        [](const Config& c) { EXPECT_EQ(c.scheduler.shard_count, 240); },
        {{"scheduler.tick", "250ms"}}}},
      {"scheduler.tick",
       {"1s",
        "1s",
        [](const Config& c) { EXPECT_EQ(c.scheduler.tick_ms, 1000); },
        {{"scheduler.shard_count", "60"}}}},
      {"scheduler.intervals",
       {"[1, 1440]", "1, 1440",
        [](const Config& c) {
          EXPECT_EQ(c.scheduler.intervals, (std::vector<int32_t>{1, 1440}));
        }}},
      {"scheduler.misfire_policy",
       {"skip", "skip",
        [](const Config& c) { EXPECT_EQ(c.scheduler.misfire_policy, MisfirePolicy::kSkip); }}},
      {"scheduler.max_catchup",
       {"1h", "1h", [](const Config& c) { EXPECT_EQ(c.scheduler.max_catchup_ms, 3'600'000); }}},
      {"scheduler.misfire_threshold",
       {"1m", "1m", [](const Config& c) { EXPECT_EQ(c.scheduler.misfire_threshold_ms, 60'000); }}},
      {"scheduler.claim_lease",
       {"10s", "10s", [](const Config& c) { EXPECT_EQ(c.scheduler.claim_lease_ms, 10'000); }}},
      {"scheduler.claim_lock_timeout",
       {"250ms", "250ms", [](const Config& c) { EXPECT_EQ(c.scheduler.claim_lock_timeout_ms, 250); }}},
      {"scheduler.workers", {"9", "9", [](const Config& c) { EXPECT_EQ(c.scheduler.workers, 9); }}},
      {"scheduler.firings_in_flight",
       {"5", "5", [](const Config& c) { EXPECT_EQ(c.scheduler.firings_in_flight, 5); }}},
      {"scheduler.catch_up_rate",
       {"25000", "25000", [](const Config& c) { EXPECT_EQ(c.scheduler.catch_up_rate, 25'000); }}},
      {"scheduler.catch_up_yield_at",
       {"2s", "2s", [](const Config& c) { EXPECT_EQ(c.scheduler.catch_up_yield_at_ms, 2'000); }}},
      {"scheduler.catch_up_chunk_minutes",
       {"5", "5", [](const Config& c) { EXPECT_EQ(c.scheduler.catch_up_chunk_minutes, 5); }}},
      {"scheduler.topic_unavailable_after",
       {"5m", "5m", [](const Config& c) { EXPECT_EQ(c.scheduler.topic_unavailable_after_ms, 300'000); }}},
      {"scheduler.one_shot_retention",
       {"3d", "3d", [](const Config& c) { EXPECT_EQ(c.scheduler.one_shot_retention_ms, 3 * 86'400'000LL); }}},
      {"commands.max_details_bytes",
       {"1024", "1024", [](const Config& c) { EXPECT_EQ(c.commands.max_details_bytes, 1024); }}},
      {"commands.allowed_topics",
       {"[\"a.*\", b]", "a.*,b",
        [](const Config& c) {
          EXPECT_EQ(c.commands.allowed_topics, (std::vector<std::string>{"a.*", "b"}));
        }}},
      {"commands.bulk_step_jobs",
       {"250", "250", [](const Config& c) { EXPECT_EQ(c.commands.bulk_step_jobs, 250); }}},
      {"commands.bulk_step_pause",
       {"1s", "1s", [](const Config& c) { EXPECT_EQ(c.commands.bulk_step_pause_ms, 1000); }}},
      {"commands.audit_retention",
       {"90d", "90d", [](const Config& c) { EXPECT_EQ(c.commands.audit_retention_ms, 90LL * 86'400'000); }}},
      {"executions.enabled", {"false", "false", [](const Config& c) { EXPECT_FALSE(c.executions.enabled); }}},
      {"executions.retention",
       {"30d", "30d", [](const Config& c) { EXPECT_EQ(c.executions.retention_ms, 30 * 86'400'000LL); }}},
      {"executions.trim_interval",
       {"1h", "1h", [](const Config& c) { EXPECT_EQ(c.executions.trim_interval_ms, 3'600'000); }}},
      {"executions.batch_max",
       {"123", "123", [](const Config& c) { EXPECT_EQ(c.executions.batch_max, 123); }}},
      {"executions.max_error_bytes",
       {"100", "100", [](const Config& c) { EXPECT_EQ(c.executions.max_error_bytes, 100); }}},
      {"admin.listen",
       {"0.0.0.0:9", "0.0.0.0:9", [](const Config& c) { EXPECT_EQ(c.admin.listen, "0.0.0.0:9"); }}},
      {"admin.token", {"s3cret", "s3cret", [](const Config& c) { EXPECT_EQ(c.admin.token, "s3cret"); }}},
      {"admin.write_token_secret",
       {"0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef",
        [](const Config& c) { EXPECT_EQ(c.admin.write_token_secret, "0123456789abcdef0123456789abcdef"); }}},
      {"admin.command_wait",
       {"3s", "3s", [](const Config& c) { EXPECT_EQ(c.admin.command_wait_ms, 3000); }}},
      {"admin.load_max_groups",
       {"2000000", "2000000", [](const Config& c) { EXPECT_EQ(c.admin.load_max_groups, 2'000'000); }}},
      {"admin.console_dir",
       {"/srv/console", "/srv/console", [](const Config& c) { EXPECT_EQ(c.admin.console_dir, "/srv/console"); }}},
      {"admin.db_sessions", {"16", "16", [](const Config& c) { EXPECT_EQ(c.admin.db_sessions, 16); }}},
      {"admin.read_wait", {"1s", "1s", [](const Config& c) { EXPECT_EQ(c.admin.read_wait_ms, 1000); }}},
      {"admin.statement_timeout",
       {"30s", "30s", [](const Config& c) { EXPECT_EQ(c.admin.statement_timeout_ms, 30'000); }}},
      {"admin.worker_threads", {"8", "8", [](const Config& c) { EXPECT_EQ(c.admin.worker_threads, 8); }}},
      {"admin.max_queued_connections",
       {"7", "7", [](const Config& c) { EXPECT_EQ(c.admin.max_queued_connections, 7); }}},
      {"admin.request_head_timeout",
       {"2s", "2s", [](const Config& c) { EXPECT_EQ(c.admin.request_head_timeout_ms, 2000); }}},
      {"admin.max_connections", {"99", "99", [](const Config& c) { EXPECT_EQ(c.admin.max_connections, 99); }}},
      {"admin.max_connections_per_client",
       {"5", "5", [](const Config& c) { EXPECT_EQ(c.admin.max_connections_per_client, 5); }}},
      {"standby.url",
       {"postgresql://h:5433/b", "postgresql://h:5433/b",
        [](const Config& c) { EXPECT_EQ(c.standby.url, "postgresql://h:5433/b"); }}},
      {"standby.max_wait", {"20ms", "20ms", [](const Config& c) { EXPECT_EQ(c.standby.max_wait_ms, 20); }}},
      {"standby.retry_after",
       {"30s", "30s", [](const Config& c) { EXPECT_EQ(c.standby.retry_after_ms, 30'000); }}},
      {"standby.admin_reads",
       {"true", "true", [](const Config& c) { EXPECT_TRUE(c.standby.admin_reads); },
        {{"standby.url", "postgresql://s/b"}}}},
      {"citus.tick_on_workers",
       {"false", "false", [](const Config& c) { EXPECT_FALSE(c.citus.tick_on_workers); }}},
      {"citus.worker_retry_after",
       {"2s", "2s", [](const Config& c) { EXPECT_EQ(c.citus.worker_retry_after_ms, 2000); }}},
      {"citus.worker_map_refresh",
       {"5m", "5m", [](const Config& c) { EXPECT_EQ(c.citus.worker_map_refresh_ms, 300'000); }}},
      {"log.level", {"debug", "debug", [](const Config& c) { EXPECT_EQ(c.log.level, "debug"); }}},
      {"log.format", {"json", "json", [](const Config& c) { EXPECT_EQ(c.log.format, "json"); }}},
  };
}

// Keys the parser recognises only to refuse them, naming what replaced them.
const std::map<std::string, std::string> kRemovedKeys = {{"executions.keep_per_job", "executions.retention"}};

TEST(ConfigParserTest, EveryKeyRoundTripsThroughYamlAndEnvironment) {
  const std::map<std::string, KeyCase> cases = KeyCases();
  auto defaults = ParseConfig("", Env({}));
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  std::set<std::string> seen;
  for (const ConfigKey& key : ConfigKeys()) {
    SCOPED_TRACE(key.path);
    ASSERT_TRUE(seen.insert(key.path).second) << "listed twice";
    if (key.kind == ConfigKeyKind::kRemoved) {
      ASSERT_TRUE(kRemovedKeys.count(key.path)) << "a removed key without a test case";
      for (auto r :
           {ParseConfig(Yaml({{key.path, "1"}}), Env({})), ParseConfig("", Env({{key.env_var, "1"}}))}) {
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find(key.path), std::string::npos) << r.status().message();
        EXPECT_NE(r.status().message().find(kRemovedKeys.at(key.path)), std::string::npos)
            << r.status().message();
      }
      continue;
    }
    ASSERT_TRUE(cases.count(key.path)) << "a config key without a round-trip case: add one to KeyCases()";
    const KeyCase& kc = cases.at(key.path);
    {
      SCOPED_TRACE("the defaults differ from the case's value");
      ::testing::TestPartResultArray failures;
      {
        ::testing::ScopedFakeTestPartResultReporter reporter(
            ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
        kc.expect(*defaults);
      }
      EXPECT_GT(failures.size(), 0) << "the case's value is the default, so it proves nothing";
    }
    std::map<std::string, std::string> yaml = kc.also;
    yaml[key.path] = kc.yaml;
    auto from_yaml = ParseConfig(Yaml(yaml), Env({}));
    ASSERT_TRUE(from_yaml.ok()) << Yaml(yaml) << from_yaml.status().ToString();
    kc.expect(*from_yaml);
    if (key.kind == ConfigKeyKind::kStringMap) {
      EXPECT_EQ(key.env_var, "");
      continue;
    }
    EXPECT_EQ(key.env_var, ExpectedEnvVar(key.path));
    std::map<std::string, std::string> env;
    for (const auto& [path, value] : kc.also) env[EnvVar(path)] = value;
    env[key.env_var] = kc.env;
    auto from_env = ParseConfig("", Env(env));
    ASSERT_TRUE(from_env.ok()) << from_env.status().ToString();
    kc.expect(*from_env);
  }
  for (const auto& [path, kc] : cases)
    EXPECT_TRUE(seen.count(path)) << path << ": a case for a key the parser lacks";
}

std::string Ms(int64_t ms) { return std::to_string(ms) + "ms"; }

TEST(ConfigParserTest, EveryNumericKeyRejectsOutOfRangeValuesNamingTheKey) {
  int checked = 0;
  for (const ConfigKey& key : ConfigKeys()) {
    std::vector<std::string> bad;  // scalar texts
    switch (key.kind) {
      case ConfigKeyKind::kInteger:
      case ConfigKeyKind::kIntegerList:
        bad = {std::to_string(key.min - 1), std::to_string(key.max + 1), "4294967416", "-4294967296",
               "99999999999999999999",      "-99999999999999999999"};
        break;
      case ConfigKeyKind::kDuration:
        bad = {Ms(key.max + 1), "999999999999d", "9223372036854775808ms", "99999999999999999999s"};
        if (key.min > 0) bad.push_back(Ms(key.min - 1));
        break;
      default:
        continue;
    }
    for (const std::string& v : bad) {
      SCOPED_TRACE(key.path + " = " + v);
      const std::string yaml_value = key.kind == ConfigKeyKind::kIntegerList ? "[1, " + v + "]" : v;
      const std::string env_value = key.kind == ConfigKeyKind::kIntegerList ? "1," + v : v;
      for (auto r : {ParseConfig(Yaml({{key.path, yaml_value}}), Env({})),
                     ParseConfig("", Env({{key.env_var, env_value}}))}) {
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find("'" + key.path + "': " + v + " is out of range ["),
                  std::string::npos)
            << r.status().message();
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(ConfigParserTest, OutOfRangeValuesAreNotNarrowed) {
  ExpectError("scheduler:\n  shard_count: 4294967416\n",
              "config key 'scheduler.shard_count': 4294967416 is out of range [1, 6000]");
  ExpectError("", "environment BELFRY_SCHEDULER_SHARD_COUNT: config key 'scheduler.shard_count': 4294967416",
              {{"BELFRY_SCHEDULER_SHARD_COUNT", "4294967416"}});
  ExpectError("scheduler:\n  intervals: [4294967297]\n",
              "'scheduler.intervals': 4294967297 is out of range [1, 1440]");
  ExpectError("scheduler:\n  workers: 4294967297\n",
              "'scheduler.workers': 4294967297 is out of range [1, 64]");
  ExpectError("kafka:\n  command_batch_max: 4294967297\n",
              "'kafka.command_batch_max': 4294967297 is out of range");
  ExpectError("scheduler:\n  max_catchup: 999999999999d\n",
              "'scheduler.max_catchup': 999999999999d is out of range [0ms, 7d]");
  ExpectError("executions:\n  retention: 106751991168d\n",
              "'executions.retention': 106751991168d is out of range [1d, 3660d]");
  ExpectError("admin:\n  read_wait: 9223372036854775807s\n",
              "'admin.read_wait': 9223372036854775807s is out of range");
  ExpectError("scheduler:\n  tick: 0ms\n", "'scheduler.tick': 0ms is out of range [10ms, 1m]");
}

TEST(ConfigParserTest, DurationsDetectOverflow) {
  EXPECT_EQ(ParseDurationMs("106751991167d"), 106751991167LL * 86400000);
  EXPECT_EQ(ParseDurationMs("106751991168d"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("999999999999d"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("9223372036854775807ms"), INT64_MAX);
  EXPECT_EQ(ParseDurationMs("9223372036854775808ms"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("99999999999999999999999ms"), std::nullopt);
}

// The range as README writes it: [1, 6000], [500ms, 10m], [1d, 3660d].
std::string RangeText(const ConfigKey& key) {
  const auto text = [&](int64_t v) {
    if (key.kind != ConfigKeyKind::kDuration) return std::to_string(v);
    for (const auto& [scale, unit] :
         {std::pair<int64_t, const char*>{86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}}) {
      if (v != 0 && v % scale == 0) return std::to_string(v / scale) + unit;
    }
    return std::to_string(v) + "ms";
  };
  std::string out = "[";  // appended, not operator+: GCC 12 warns falsely (-Wrestrict) on the chain
  out += text(key.min);
  out += ", ";
  out += text(key.max);
  return out + "]";
}

TEST(ConfigParserTest, ReadmeDocumentsEveryKeyAndItsRange) {
  std::ifstream in(BELFRY_README);
  ASSERT_TRUE(in) << BELFRY_README;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  const size_t section = readme.find("## Configuration");
  ASSERT_NE(section, std::string::npos);
  const size_t begin = readme.find("```yaml\n", section);
  const size_t end = readme.find("```\n", begin + 8);
  ASSERT_NE(end, std::string::npos);
  std::map<std::string, std::string> lines;  // dotted path -> its line
  std::istringstream block(readme.substr(begin + 8, end - begin - 8));
  std::string parent;
  for (std::string line; std::getline(block, line);) {
    const size_t indent = line.find_first_not_of(' ');
    const size_t colon = line.find(':');
    if (indent == std::string::npos || line[indent] == '#' || colon == std::string::npos) continue;
    const std::string name = line.substr(indent, colon - indent);
    if (indent == 0) parent = name;
    if (indent == 0 || indent == 2) lines[indent == 0 ? name : parent + "." + name] = line;
  }
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.kind == ConfigKeyKind::kRemoved) continue;
    SCOPED_TRACE(key.path);
    ASSERT_TRUE(lines.count(key.path)) << "README's config example lacks the key";
    if (key.kind == ConfigKeyKind::kInteger || key.kind == ConfigKeyKind::kDuration ||
        key.kind == ConfigKeyKind::kIntegerList) {
      EXPECT_NE(lines.at(key.path).find(RangeText(key)), std::string::npos)
          << lines.at(key.path) << "\nshould say " << RangeText(key);
    }
  }
}

}  // namespace
}  // namespace belfry
