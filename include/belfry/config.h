// Config: one plain struct per section, defaults written here. Parsed from YAML with BELFRY_*
// environment overrides by ParseConfig (src/app/config_parser). Unknown keys are an error.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace belfry {

enum class MisfirePolicy { kFireAll, kCoalesce, kSkip };

struct KafkaConfig {
  std::string brokers = "127.0.0.1:59092";
  std::string commands_topic = "belfry.commands";
  std::string dlq_topic = "belfry.commands.dlq";
  std::string results_topic = "belfry.command-results";
  // The audit trail's change events (docs/audit-trail.md): compacted, keyed by job id.
  std::string changes_topic = "belfry.changes";
  std::string group_id = "belfry";
  int32_t command_batch_max = 5000;  // commands per transaction
  int64_t command_batch_wait_ms = 50;
  // Execution outcomes (docs/executions.md): consumed by their own group, bad reports to their DLQ.
  std::string executions_topic = "belfry.executions";
  std::string executions_dlq_topic = "belfry.executions.dlq";
  // Triggers the broker refused for good (docs/reliability.md, "Undeliverable triggers").
  std::string triggers_dlq_topic = "belfry.triggers.dlq";
  std::string executions_group_id = "belfry-executions";
  // Raw librdkafka settings (TLS, SASL, ...) applied to every client, after belfry's own.
  std::map<std::string, std::string> properties;
};

struct SchedulerConfig {
  // false: this node claims no shard and fires nothing; it still applies commands, stores
  // execution reports and serves the admin API (an API-only node).
  bool enabled = true;
  int32_t shard_count = 120;
  int64_t tick_ms = 500;  // shard_count * tick_ms must be 60000
  std::vector<int32_t> intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
  MisfirePolicy misfire_policy = MisfirePolicy::kFireAll;
  int64_t max_catchup_ms = 15 * 60 * 1000;
  // A slot fired later than this after its time counts as missed and follows the misfire policy.
  int64_t misfire_threshold_ms = 30 * 1000;
  int64_t claim_lease_ms = 3000;
  // A claim (of a shard's minute or of its debt) gives up after waiting this long for a lock on
  // its shard_state row, and the shard is retried with its back-off: a row held for long (a
  // Citus `block_writes` shard move) then delays that shard, not every shard behind it in the
  // firing workers (docs/scale-out.md). 0 = wait as long as the lock is held.
  int64_t claim_lock_timeout_ms = 1000;
  // Concurrent shard queries, each worker with its own database connections. All but one may
  // run catch-up at once, so 4 lets PostgreSQL run three catch-up queries in parallel.
  int32_t workers = 4;
  // Firings a worker keeps open while their acks arrive: it queues the next shard's triggers
  // instead of waiting. A shard's watermark still moves only after all of its acks.
  int32_t firings_in_flight = 2;
  // Catch-up (docs/catch-up.md). Missed minutes become debt, fired by debt firings through their
  // own producer at up to `catch_up_rate` triggers/s per node (0 = unlimited): 2x the 50k/s of
  // 3M triggers/min, under a third of the ~360k/s burst peak measured on the reference machine.
  // A ceiling: the rate in force follows the present's lateness (catch_up_yield_at_ms).
  int64_t catch_up_rate = 100'000;
  // Pacing (docs/catch-up.md, "Pacing"): `catch_up_rate` is the ceiling. An on-time firing whose
  // last ack comes more than `catch_up_yield_at_ms` after its slot halves the catch-up's rate
  // (down to 1% of the ceiling); on-time firings within it let the rate climb back to the ceiling
  // over 30 s. 0 = a fixed rate.
  int64_t catch_up_yield_at_ms = 500;
  // Minutes of debt one fire_all debt firing takes (one query each); coalesce takes the whole
  // lowest range. Smaller chunks settle (and so survive a crash) sooner.
  int32_t catch_up_chunk_minutes = 1;
  // A topic whose triggers fail with broker errors for this long, while other triggers are
  // delivered, has its broker errors counted as record errors (topic_unavailable): dead-lettered,
  // so that it no longer holds its shards (docs/reliability.md, "Undeliverable triggers").
  int64_t topic_unavailable_after_ms = 2 * 60 * 1000;
  // A one-shot job is deleted by the background sweep this long after its run minute.
  int64_t one_shot_retention_ms = 24 * 60 * 60 * 1000LL;
};

struct CommandsConfig {
  int64_t max_details_bytes = 64 * 1024;
  // Glob patterns ('*' matches any run of characters). belfry's own topics and "__*" are
  // always refused, whatever this says.
  std::vector<std::string> allowed_topics = {"*"};
  // Bulk operations (docs/bulk-operations.md): each step changes at most this many jobs in one
  // transaction, and the node rests this long between steps, so that an operation over millions
  // of jobs holds no lock for long and leaves the database to the tick.
  int32_t bulk_step_jobs = 1000;
  int64_t bulk_step_pause_ms = 100;
  // The audit trail (docs/audit-trail.md): each job's change history is kept this long in the
  // database (its events stay in the compacted changes topic as the topic's policy says).
  int64_t audit_retention_ms = 30LL * 24 * 60 * 60 * 1000;
};

struct ExecutionsConfig {
  bool enabled = true;          // run the execution consumer in `belfry serve`
  // History is kept by time: daily partitions of `executions`, dropped whole once the day is
  // older than `retention` (docs/executions.md, "History"). Replaces keep_per_job (issue 16).
  int64_t retention_ms = 7LL * 24 * 60 * 60 * 1000;
  int64_t trim_interval_ms = 5 * 60 * 1000;  // how often the history sweep runs
  int32_t batch_max = 5000;     // reports per database transaction
  int64_t max_error_bytes = 4096;
};

struct AdminConfig {
  std::string listen = "127.0.0.1:8080";
  std::string token;  // required when listen is not a loopback address
  // POST /v1/commands and the console's actions (docs/console.md): the HMAC-SHA256 key that signs
  // the write tokens (`belfry token`), at least 32 bytes. Empty: writes over HTTP are off.
  std::string write_token_secret;
  int64_t command_wait_ms = 10'000;  // how long POST /v1/commands waits for the outcome by default
  // The console's files (GET /ui/): empty = the copies compiled into the binary; a directory
  // (web/console/ of a checkout) = read from there at each request, to work on the console.
  std::string console_dir;
  // GET /v1/load's bound (docs/load-projection.md): at most this many groups of jobs that fire
  // alike, one projection at a time; ~470 bytes a group at its peak (measured: 568k groups, 269 MB).
  int64_t load_max_groups = 1'000'000;
  // The read side (docs/operations.md, "Limits"). Database sessions the API reads through: up to
  // this many requests read at once, each session with its own connections and prepared statements.
  int32_t db_sessions = 4;
  int64_t read_wait_ms = 250;          // longest wait for a free session, then 503 + Retry-After
  int64_t statement_timeout_ms = 2000;  // PostgreSQL statement_timeout of the API's sessions
  // Connections (docs/operations.md, "Connections"): request heads are read without a thread,
  // each within one deadline; a worker is held only while a request is served.
  int32_t worker_threads = 64;          // requests served at once (probes have a lane of their own)
  int32_t max_queued_connections = 64;  // requests waiting for a worker; then 503 + Retry-After
  int64_t request_head_timeout_ms = 5000;  // the whole request head; then 408 and close
  int32_t max_connections = 1024;          // open at once; then 503 + Retry-After and close
  int32_t max_connections_per_client = 32;  // open at once from one client address; then the same
};

// A hot standby of database_url (docs/hot-standby.md): it serves the tick query, fenced by the
// primary's WAL position, and optionally the admin API's reads. Claims, watermarks, commands and
// execution reports always go to the primary.
struct StandbyConfig {
  std::string url;              // libpq URL; empty: no standby
  int64_t max_wait_ms = 50;     // longest a tick query waits for the standby to reach its fence
  int64_t retry_after_ms = 5000;  // after the standby failed, the primary serves this long
  bool admin_reads = false;     // the admin API reads from the standby (the primary if it is down)
};

// On a Citus cluster (docs/scale-out.md): each tick query goes straight to the worker that holds
// its shard instead of through the coordinator (database_url), unless a standby is configured.
// Ignored on a plain PostgreSQL.
struct CitusConfig {
  bool tick_on_workers = true;
  int64_t worker_retry_after_ms = 5000;    // after a worker failed, the coordinator serves this long
  int64_t worker_map_refresh_ms = 60'000;  // how long a shard's worker is remembered
};

struct LogConfig {
  std::string level = "info";
  std::string format = "text";  // text | json
};

struct Config {
  std::string database_url = "postgresql://belfry:belfry@127.0.0.1:55432/belfry";
  std::string node_id;  // empty = hostname-pid
  std::string migrations_dir;  // empty = search ./migrations, then /usr/share/belfry/migrations
  KafkaConfig kafka;
  SchedulerConfig scheduler;
  CommandsConfig commands;
  ExecutionsConfig executions;
  AdminConfig admin;
  StandbyConfig standby;
  CitusConfig citus;
  LogConfig log;
};

}  // namespace belfry
