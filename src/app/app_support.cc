#include "app/app_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

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

RetryRules MakeRetryRules(const Config& cfg) {
  RetryRules rules;
  rules.layout = ShardLayout{cfg.scheduler.shard_count};
  rules.max_late_ms = cfg.scheduler.max_catchup_ms;
  return rules;
}

}  // namespace belfry
