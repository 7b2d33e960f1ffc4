// ServeRules: everything `belfry serve` derives from its config, derived once, before any
// component is built: the node's identity, the rules its components validate and plan by, and
// the parts its stores share (connection strings, the job stores' statements, the tick query's
// standby, retry placement).
// RunServe (serve_command.cc) hands these to the components it wires; nothing else derives them.
#pragma once

#include <optional>
#include <string>

#include "app/bulk_op_runner.h"
#include "app/sweeper.h"
#include "belfry/config.h"
#include "belfry/status.h"
#include "core/catch_up_governor.h"
#include "core/command_parser.h"
#include "core/execution_report.h"
#include "core/retry_planner.h"
#include "core/topic_policy.h"
#include "pg/pg_job_store_options.h"
#include "pg/pg_standby_reader.h"

namespace belfry {

// The output-topic policy: the configured allowlist, with belfry's own topics reserved.
TopicPolicy MakeTopicPolicy(const Config& cfg);

// Validation rules for commands. `policy` must outlive the result.
CommandRules MakeCommandRules(const Config& cfg, const TopicPolicy* policy);

// Immutable after construction, so any thread may read it. Components keep pointers into it
// (command_rules points at topic_policy), so it is neither copied nor moved: build it first.
struct ServeRules final {
  explicit ServeRules(const Config& cfg);
  ServeRules(const ServeRules&) = delete;
  ServeRules& operator=(const ServeRules&) = delete;

  const std::string node_id;         // ResolveNodeId
  const std::string migrations_dir;  // ResolveMigrationsDir
  const TopicPolicy topic_policy;
  const CommandRules command_rules;  // its topic_policy is &topic_policy
  // Retry placement, for every execution store (the consumer's, the admin sessions', the sweep's).
  const RetryRules retry_rules;
  const ExecutionRules execution_rules;
  // What every PgJobStore of the node shares: the primary's connection string, the statement list
  // (built here, once) and the tz database; no standby. The scheduler workers' stores add
  // tick_standby, the admin sessions' take admin_job_stores.
  const PgJobStoreOptions job_stores;
  // The tick queries' hot standby (docs/hot-standby.md); url empty: none. on_route is left unset:
  // the caller counts the routes.
  const StandbyOptions tick_standby;
  // On Citus, the scheduler workers' tick queries straight to the shard's worker (citus.*).
  const WorkerTickOptions tick_workers;
  // The admin API's read sessions' connection string: the primary's, or with standby.admin_reads
  // the standby's falling back to the primary, with admin.statement_timeout and the generic plan
  // set for every session. Not ok when the URLs cannot be combined or parsed.
  const StatusOr<std::string> admin_database_url;
  // job_stores on admin_database_url (sharing its statement list): the admin sessions' job stores.
  // Not ok when admin_database_url is not.
  const StatusOr<PgJobStoreOptions> admin_job_stores;
  // Pacing of the catch-up rate (scheduler.catch_up_yield_at); none when it is 0.
  const std::optional<CatchUpGovernorOptions> catch_up_governor;
  const SweeperOptions sweeps;
  const BulkOpRunnerOptions bulk_steps;
};

}  // namespace belfry
