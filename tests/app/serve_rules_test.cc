// ServeRules: what `belfry serve` derives from its config, each rule from its keys, and the
// command rules checking topics against the rules' own policy.
#include "app/serve_rules.h"

#include <gtest/gtest.h>

#include <string>

namespace belfry {
namespace {

Config TestConfig() {
  Config cfg;
  cfg.database_url = "postgresql://belfry:pw@db.example:5432/belfry";
  cfg.node_id = "node-a";
  cfg.migrations_dir = "/opt/belfry/migrations";
  return cfg;
}

TEST(ServeRulesTest, NodeIdentityComesFromTheConfigWhenSet) {
  const ServeRules rules(TestConfig());
  EXPECT_EQ(rules.node_id, "node-a");
  EXPECT_EQ(rules.migrations_dir, "/opt/belfry/migrations");
}

TEST(ServeRulesTest, CommandRulesCheckTopicsAgainstTheRulesOwnPolicy) {
  Config cfg = TestConfig();
  cfg.commands.allowed_topics = {"jobs.*"};
  cfg.scheduler.intervals = {1, 5, 60};
  const ServeRules rules(cfg);
  EXPECT_EQ(rules.command_rules.topic_policy, &rules.topic_policy);
  EXPECT_EQ(rules.command_rules.intervals, (std::vector<int32_t>{1, 5, 60}));
  EXPECT_TRUE(rules.topic_policy.Check("jobs.poll").ok());
  EXPECT_FALSE(rules.topic_policy.Check("other").ok());
  EXPECT_FALSE(rules.topic_policy.Check(cfg.kafka.commands_topic).ok()) << "belfry's own topics are reserved";
  EXPECT_FALSE(rules.topic_policy.Check(cfg.kafka.changes_topic).ok());
}

TEST(ServeRulesTest, RetryAndExecutionRulesFollowTheScheduler) {
  Config cfg = TestConfig();
  cfg.scheduler.max_catchup_ms = 123'000;
  cfg.executions.max_error_bytes = 777;
  const ServeRules rules(cfg);
  EXPECT_EQ(rules.retry_rules.layout, ShardLayout{cfg.scheduler.shard_count});
  EXPECT_EQ(rules.retry_rules.max_late_ms, 123'000);
  EXPECT_EQ(rules.execution_rules.max_error_bytes, 777);
}

TEST(ServeRulesTest, NoStandbyMeansTheTickQueriesAndAdminReadsUseThePrimary) {
  Config cfg = TestConfig();
  cfg.admin.statement_timeout_ms = 2500;
  const ServeRules rules(cfg);
  EXPECT_TRUE(rules.tick_standby.url.empty());
  ASSERT_TRUE(rules.admin_database_url.ok()) << rules.admin_database_url.status().ToString();
  const std::string& url = *rules.admin_database_url;
  EXPECT_NE(url.find("db.example"), std::string::npos) << url;
  EXPECT_NE(url.find("statement_timeout=2500"), std::string::npos) << url;
  EXPECT_NE(url.find("plan_cache_mode=force_generic_plan"), std::string::npos) << url;
}

TEST(ServeRulesTest, AStandbyServesTheTickQueriesAndWithAdminReadsTheAdminSessions) {
  Config cfg = TestConfig();
  cfg.standby.url = "postgresql://belfry:pw@replica.example:5432/belfry";
  cfg.standby.max_wait_ms = 40;
  cfg.standby.retry_after_ms = 7000;
  cfg.standby.admin_reads = true;
  const ServeRules rules(cfg);
  EXPECT_EQ(rules.tick_standby.url, cfg.standby.url);
  EXPECT_EQ(rules.tick_standby.rule.max_wait_ms, 40);
  EXPECT_EQ(rules.tick_standby.retry_after_ms, 7000);
  EXPECT_FALSE(rules.tick_standby.on_route) << "the caller counts the routes";
  ASSERT_TRUE(rules.admin_database_url.ok()) << rules.admin_database_url.status().ToString();
  EXPECT_NE(rules.admin_database_url->find("replica.example"), std::string::npos) << *rules.admin_database_url;
  EXPECT_NE(rules.admin_database_url->find("prefer-standby"), std::string::npos) << *rules.admin_database_url;
}

TEST(ServeRulesTest, AnAdminUrlThatCannotBeBuiltIsAnErrorToReport) {
  Config cfg = TestConfig();
  cfg.standby.url = "postgresql://someone_else:pw@replica.example:5432/other";
  cfg.standby.admin_reads = true;
  const ServeRules rules(cfg);
  EXPECT_FALSE(rules.admin_database_url.ok()) << "the standby and the primary differ in more than host and port";
  EXPECT_FALSE(rules.admin_job_stores.ok());
}

TEST(ServeRulesTest, TheJobStoresShareOneStatementListAndTheAdminSessionsConnectToTheirUrl) {
  Config cfg = TestConfig();
  cfg.standby.url = "postgresql://belfry:pw@replica.example:5432/belfry";
  cfg.standby.admin_reads = true;
  const ServeRules rules(cfg);
  const PgJobStoreOptions& primary = rules.job_stores;
  ASSERT_NE(primary.statements, nullptr);
  EXPECT_FALSE(primary.statements->empty());
  EXPECT_NE(primary.database.str().find("db.example"), std::string::npos) << primary.database.str();
  EXPECT_NE(primary.database.str().find("connect_timeout"), std::string::npos) << "prepared once, here";
  EXPECT_TRUE(primary.standby.url.empty()) << "only the scheduler workers' stores read from the standby";
  ASSERT_TRUE(rules.admin_job_stores.ok()) << rules.admin_job_stores.status().ToString();
  EXPECT_EQ(rules.admin_job_stores->statements, primary.statements) << "one list, not a copy";
  EXPECT_EQ(rules.admin_job_stores->database.str(), PgConninfo(*rules.admin_database_url).str());
  EXPECT_EQ(rules.admin_job_stores->time_zones, primary.time_zones);
}

TEST(ServeRulesTest, CatchUpGovernorOnlyWhenTheYieldPointIsSet) {
  Config cfg = TestConfig();
  cfg.scheduler.catch_up_rate = 40'000;
  cfg.scheduler.catch_up_yield_at_ms = 300;
  {
    const ServeRules rules(cfg);
    ASSERT_TRUE(rules.catch_up_governor.has_value());
    EXPECT_EQ(rules.catch_up_governor->min_rate, 400);
    EXPECT_EQ(rules.catch_up_governor->yield_at_ms, 300);
  }
  cfg.scheduler.catch_up_yield_at_ms = 0;
  EXPECT_FALSE(ServeRules(cfg).catch_up_governor.has_value());
}

TEST(ServeRulesTest, SweepsAndBulkStepsFollowTheirKeys) {
  Config cfg = TestConfig();
  cfg.scheduler.one_shot_retention_ms = 11;
  cfg.commands.audit_retention_ms = 22;
  cfg.executions.retention_ms = 33;
  cfg.executions.trim_interval_ms = 44;
  cfg.commands.bulk_step_jobs = 55;
  cfg.commands.bulk_step_pause_ms = 66;
  const ServeRules rules(cfg);
  EXPECT_EQ(rules.sweeps.one_shot_retention_ms, 11);
  EXPECT_EQ(rules.sweeps.audit_retention_ms, 22);
  EXPECT_EQ(rules.sweeps.history_retention_ms, 33);
  EXPECT_EQ(rules.sweeps.history_every_ms, 44);
  EXPECT_EQ(rules.bulk_steps.step_jobs, 55);
  EXPECT_EQ(rules.bulk_steps.step_pause_ms, 66);
}

}  // namespace
}  // namespace belfry
