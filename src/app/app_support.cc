#include "app/app_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "tzdb/system_time_zone_database.h"

namespace belfry {

const char* const kBelfryVersion = "0.1.0";

std::string ResolveMigrationsDir(const Config& cfg) {
  namespace fs = std::filesystem;
  if (!cfg.migrations_dir.empty()) return cfg.migrations_dir;
  std::error_code ec;
  if (fs::is_directory("migrations", ec)) return "migrations";
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate : {exe.parent_path().parent_path() / "migrations",
                                      exe.parent_path().parent_path() / "share/belfry/migrations"}) {
      if (fs::is_directory(candidate, ec)) return candidate.string();
    }
  }
  return "/usr/share/belfry/migrations";
}

std::string ResolveNodeId(const Config& cfg) {
  if (!cfg.node_id.empty()) return cfg.node_id;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "node");
  return fmt::format("{}-{}", host, getpid());
}

TopicPolicy MakeTopicPolicy(const Config& cfg) {
  return TopicPolicy(cfg.commands.allowed_topics,
                     {cfg.kafka.commands_topic, cfg.kafka.dlq_topic, cfg.kafka.results_topic,
                      cfg.kafka.executions_topic, cfg.kafka.executions_dlq_topic, cfg.kafka.changes_topic,
                      cfg.kafka.triggers_dlq_topic});
}

RetryRules MakeRetryRules(const Config& cfg) {
  RetryRules rules;
  rules.layout = ShardLayout{cfg.scheduler.shard_count};
  rules.max_late_ms = cfg.scheduler.max_catchup_ms;
  return rules;
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

}  // namespace belfry
