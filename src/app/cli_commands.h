// The `belfry` subcommands other than serve and reshard, one file per resource (main.cc parses
// the flags). Each returns the process exit code and prints a one-line reason on failure; what
// they share is app/cli_support.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/config.h"

namespace belfry {

// Whether a command that publishes waits for its outcome on the command-results topic, and how long.
struct WaitArgs {
  bool wait = true;
  int64_t timeout_ms = 30'000;
};

// ---- belfry token: a write token for POST /v1/commands (cli_token_command.cc) ----
int RunToken(const Config& cfg, const std::string& actor, int64_t ttl_ms);

// ---- belfry migrate: the schema and belfry's Kafka topics (cli_migrate_command.cc) ----
int RunMigrate(const Config& cfg, bool create_topics);

// ---- belfry jobs put|delete|pause|resume|trigger|backfill|get|list|next (cli_job_commands.cc) ----
struct PutJobArgs {
  std::string file;  // a JSON command file ("-" = stdin); flags below override its fields
  std::string id, owner, topic, key, every, details, start, end, run_at, cron, time_zone;
  std::optional<int> interval_minutes, offset_minutes, priority, max_retries, max_fires;
  std::optional<int64_t> retry_initial_seconds, retry_max_seconds;
  std::optional<double> retry_multiplier;
  std::vector<std::string> labels;  // key=value
};
int RunJobsPut(const Config& cfg, const PutJobArgs& args, const WaitArgs& wait);
// op: "delete" (publishes a tombstone when tombstone is set), "pause" (with an optional reason
// and actor), "resume", "trigger".
int RunJobsOp(const Config& cfg, const std::string& op, const std::string& id, bool tombstone, const WaitArgs& wait,
              const std::string& reason = {}, const std::string& actor = {});
// A backfill command (docs/manual-fires.md): the job's slots in [from, to), fired now with their
// own scheduledFor, at most rate_per_minute a minute (0: belfry's default); a dry run counts them.
struct BackfillArgs {
  std::string from;
  std::string to;
  int rate_per_minute = 0;
  bool dry_run = false;
};
int RunJobsBackfill(const Config& cfg, const std::string& id, const BackfillArgs& args, const WaitArgs& wait);
int RunJobsGet(const Config& cfg, const std::string& id, bool json);
// `labels`: key=value terms the jobs' labels must all contain; `id_prefix`: ids that start with it.
int RunJobsList(const Config& cfg, const std::string& owner, const std::string& topic,
                const std::vector<std::string>& labels, const std::string& id_prefix, int limit,
                const std::string& cursor, const std::string& output);
// The job's next n fires; with `json`, GET /v1/jobs/{id}/next?n=<n>'s answer (EncodeNextFiresView).
int RunJobsNext(const Config& cfg, const std::string& id, int n, bool json);

// ---- belfry jobs history: a job's execution outcomes (cli_execution_commands.cc) ----
int RunJobsHistory(const Config& cfg, const std::string& id, int limit, const std::string& cursor,
                   const std::string& output);

// ---- belfry jobs audit: a job's audit trail, docs/audit-trail.md (cli_change_commands.cc) ----
// Newest first; `cursor` is the change id a previous page printed (0: from the newest).
int RunJobsAudit(const Config& cfg, const std::string& id, int limit, int64_t cursor, const std::string& output);

// ---- belfry bulk: bulk operations, docs/bulk-operations.md (cli_bulk_op_commands.cc) ----
// A bulk command: op (pause, resume, delete, trigger) over every job with this owner and/or these
// key=value labels; `id` names the operation (generated when empty).
struct BulkArgs {
  std::string op, id, owner, reason, actor;
  std::vector<std::string> labels;
  bool dry_run = false;
};
int RunBulk(const Config& cfg, const BulkArgs& args, const WaitArgs& wait);
int RunBulkGet(const Config& cfg, const std::string& id);
int RunBulkList(const Config& cfg, int limit);

// ---- belfry shards, belfry explain: shard progress, a shard's tick query (cli_shard_commands.cc) ----
int RunShards(const Config& cfg, bool json);
int RunExplain(const Config& cfg, int shard, const std::string& at);

// ---- belfry load, belfry rebalance: docs/load-projection.md (cli_load_commands.cc) ----
// `belfry load`: the load projection of a window, as a table or as GET /v1/load's JSON.
int RunLoad(const Config& cfg, const std::string& from, const std::string& to, const std::string& by, int top,
            bool with_shards, bool json);
// `belfry rebalance --dry-run`: proposed offset moves that flatten the busiest minute of the day
// ("Rebalance").
int RunRebalance(const Config& cfg, int example_ids, bool json);

// ---- belfry watch: triggers as they arrive, with their lateness (cli_watch_command.cc) ----
int RunWatch(const Config& cfg, const std::vector<std::string>& topics, bool from_beginning);

}  // namespace belfry
