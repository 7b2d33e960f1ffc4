#include "app/serve_rules.h"

#include <algorithm>

#include "app/app_support.h"
#include "pg/connection_options.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

ExecutionRules MakeExecutionRules(const Config& cfg) {
  ExecutionRules rules;
  rules.max_error_bytes = cfg.executions.max_error_bytes;
  return rules;
}

StandbyOptions MakeTickStandby(const Config& cfg) {
  StandbyOptions standby;
  if (cfg.standby.url.empty()) return standby;
  standby.url = cfg.standby.url;
  standby.rule.max_wait_ms = cfg.standby.max_wait_ms;
  standby.retry_after_ms = cfg.standby.retry_after_ms;
  return standby;
}

// Their prepared statements always run the generic plan: jobs has 121 partitions, and a custom
// plan costs 10-15 ms of planning per owner listing against 1.5 ms of execution (BENCHMARKS.md,
// issue 16).
StatusOr<std::string> MakeAdminDatabaseUrl(const Config& cfg) {
  StatusOr<std::string> url =
      cfg.standby.admin_reads ? PreferStandbyConninfo(cfg.standby.url, cfg.database_url) : cfg.database_url;
  if (url.ok()) url = WithSessionSetting(*url, "statement_timeout", std::to_string(cfg.admin.statement_timeout_ms));
  if (url.ok()) url = WithSessionSetting(*url, "plan_cache_mode", "force_generic_plan");
  return url;
}

StatusOr<PgJobStoreOptions> MakeAdminJobStores(const PgJobStoreOptions& job_stores,
                                               const StatusOr<std::string>& admin_database_url) {
  if (!admin_database_url.ok()) return admin_database_url.status();
  PgJobStoreOptions admin = job_stores;
  admin.database = PgConninfo(*admin_database_url);
  return admin;
}

std::optional<CatchUpGovernorOptions> MakeCatchUpGovernor(const SchedulerConfig& scheduler) {
  if (scheduler.catch_up_yield_at_ms <= 0) return std::nullopt;
  CatchUpGovernorOptions governor;
  governor.min_rate = scheduler.catch_up_rate / 100;
  governor.yield_at_ms = scheduler.catch_up_yield_at_ms;
  return governor;
}

SweeperOptions MakeSweeperOptions(const Config& cfg) {
  SweeperOptions sweeps;
  sweeps.one_shot_retention_ms = cfg.scheduler.one_shot_retention_ms;
  sweeps.audit_retention_ms = cfg.commands.audit_retention_ms;
  sweeps.history_retention_ms = cfg.executions.retention_ms;
  sweeps.history_every_ms = cfg.executions.trim_interval_ms;
  return sweeps;
}

BulkOpRunnerOptions MakeBulkStepOptions(const CommandsConfig& commands) {
  BulkOpRunnerOptions bulk;
  bulk.step_jobs = commands.bulk_step_jobs;
  bulk.step_pause_ms = commands.bulk_step_pause_ms;
  return bulk;
}

}  // namespace

TopicPolicy MakeTopicPolicy(const Config& cfg) {
  return TopicPolicy(cfg.commands.allowed_topics,
                     {cfg.kafka.commands_topic, cfg.kafka.dlq_topic, cfg.kafka.results_topic,
                      cfg.kafka.executions_topic, cfg.kafka.executions_dlq_topic, cfg.kafka.changes_topic,
                      cfg.kafka.triggers_dlq_topic});
}

CommandRules MakeCommandRules(const Config& cfg, const TopicPolicy* policy) {
  CommandRules rules;
  rules.intervals = cfg.scheduler.intervals;
  rules.shard_count = cfg.scheduler.shard_count;
  rules.max_details_bytes = cfg.commands.max_details_bytes;
  rules.max_command_bytes = std::max<int64_t>(256 * 1024, cfg.commands.max_details_bytes + 64 * 1024);
  rules.topic_policy = policy;
  rules.time_zones = &SystemTimeZones();
  rules.one_shot.tick_ms = cfg.scheduler.tick_ms;
  rules.one_shot.max_catchup_ms = cfg.scheduler.max_catchup_ms;
  rules.one_shot.fire_late = cfg.scheduler.misfire_policy != MisfirePolicy::kSkip;
  return rules;
}

ServeRules::ServeRules(const Config& cfg)
    : node_id(ResolveNodeId(cfg)),
      migrations_dir(ResolveMigrationsDir(cfg)),
      topic_policy(MakeTopicPolicy(cfg)),
      command_rules(MakeCommandRules(cfg, &topic_policy)),
      retry_rules(MakeRetryRules(cfg)),
      execution_rules(MakeExecutionRules(cfg)),
      job_stores(MakePgJobStoreOptions(cfg.database_url, StandbyOptions{}, SystemTimeZones())),
      tick_standby(MakeTickStandby(cfg)),
      tick_workers{.enabled = cfg.citus.tick_on_workers,
                   .map_refresh_ms = cfg.citus.worker_map_refresh_ms,
                   .retry_after_ms = cfg.citus.worker_retry_after_ms},
      admin_database_url(MakeAdminDatabaseUrl(cfg)),
      admin_job_stores(MakeAdminJobStores(job_stores, admin_database_url)),
      catch_up_governor(MakeCatchUpGovernor(cfg.scheduler)),
      sweeps(MakeSweeperOptions(cfg)),
      bulk_steps(MakeBulkStepOptions(cfg.commands)) {}

}  // namespace belfry
