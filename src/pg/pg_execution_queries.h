// The SQL of PgExecutionStore (src/pg/pg_execution_store.cc): named constants, $n parameters.
#pragma once

#include "pg/pg_job_sql.h"  // BELFRY_MS_TO_TIMESTAMPTZ, BELFRY_TS_TO_MS, BELFRY_ACROSS_CUTOVER, BELFRY_NEXT_MINUTE_AT


namespace belfry::pg_queries {

// ---- Storing a batch (PgExecutionStore::ApplyReports). -------------------------------------
// Reports and folded counters are streamed with COPY into per-session temporary staging tables
// (created on first use in each session: a temporary table cannot live in migrations/; emptied
// at every commit, so their rows exist only inside the transaction of one batch), then applied
// with one set-based statement each. The tables are not logged, being temporary; what they feed
// (executions, job_stats) is. Why COPY rather than a JSON parameter: docs/executions.md,
// "Ingestion throughput".

inline constexpr const char kExecutionStageTable[] = "belfry_execution_stage";
// The COPY column order; PgExecutionStore writes each row's fields in this order.
inline constexpr const char* kExecutionStageColumns[] = {
    "job_id",     "scheduled_for_ms", "attempt", "status",        "error",
    "started_ms", "finished_ms",      "worker",  "src_partition", "src_offset"};
inline constexpr const char kJobStatsStageTable[] = "belfry_job_stats_stage";
inline constexpr const char* kJobStatsStageColumns[] = {"job_id",
                                                        "last_status",
                                                        "last_scheduled_for_ms",
                                                        "last_attempt",
                                                        "last_error",
                                                        "last_finished_ms",
                                                        "consecutive_failures",
                                                        "total_succeeded",
                                                        "total_failed",
                                                        "last_success_scheduled_for_ms"};
inline constexpr const char kCreateExecutionStagesSql[] =
    "CREATE TEMPORARY TABLE belfry_execution_stage (job_id text, scheduled_for_ms bigint, attempt int,"
    " status text, error text, started_ms bigint, finished_ms bigint, worker text, src_partition int,"
    " src_offset bigint) ON COMMIT DELETE ROWS;"
    "CREATE TEMPORARY TABLE belfry_job_stats_stage (job_id text, last_status text,"
    " last_scheduled_for_ms bigint, last_attempt int, last_error text, last_finished_ms bigint,"
    " consecutive_failures bigint, total_succeeded bigint, total_failed bigint,"
    " last_success_scheduled_for_ms bigint) ON COMMIT DELETE ROWS";
inline constexpr const char kExecutionStagesExistName[] = "belfry_execution_stages_exist";
inline constexpr const char kExecutionStagesExistSql[] =
    "SELECT to_regclass('pg_temp.belfry_job_stats_stage') IS NOT NULL";

// Inserts the staged reports that are new and returns their keys (a repeat returns nothing;
// `executions`' primary key holds its partition key, scheduled_for_ms, so a repeat always meets
// its first copy in the same partition).
inline constexpr const char kInsertStagedExecutionsName[] = "belfry_insert_staged_executions";
inline constexpr const char kInsertStagedExecutionsSql[] =
    "INSERT INTO executions (job_id, scheduled_for_ms, attempt, status, error, started_at, finished_at, worker,"
    " src_partition, src_offset) "
    "SELECT a.job_id, a.scheduled_for_ms, a.attempt, a.status, a.error,"
    " " BELFRY_MS_TO_TIMESTAMPTZ("a.started_ms") ", " BELFRY_MS_TO_TIMESTAMPTZ("a.finished_ms") ","
    " a.worker, a.src_partition, a.src_offset "
    "FROM belfry_execution_stage AS a "
    "ON CONFLICT DO NOTHING "
    "RETURNING job_id, scheduled_for_ms, attempt, status";

// $1 = text[] of job ids. Locks the rows, so concurrent batches fold in turn.
inline constexpr const char kLockJobStatsName[] = "belfry_lock_job_stats";
inline constexpr const char kLockJobStatsSql[] =
    "SELECT " BELFRY_STATS_COLUMNS
    " FROM job_stats WHERE job_id = ANY ($1::text[]) ORDER BY job_id FOR UPDATE";
// Citus (PgSession::citus): the same, one job at a time, in job id order. Citus locks rows only in
// a statement that reaches one shard, and job_stats is distributed by job_id (migration 0019).
// $1 = job id.
inline constexpr const char kLockJobStatsOfJobName[] = "belfry_lock_job_stats_of_job";
inline constexpr const char kLockJobStatsOfJobSql[] =
    "SELECT " BELFRY_STATS_COLUMNS " FROM job_stats WHERE job_id = $1 FOR UPDATE";

inline constexpr const char kGetJobStatsName[] = "belfry_get_job_stats";
inline constexpr const char kGetJobStatsSql[] =
    "SELECT " BELFRY_STATS_COLUMNS " FROM job_stats WHERE job_id = $1";

// Writes the staged folded counters (whole rows) over job_stats. updated_at is the transaction's
// now(), set by the SELECT and taken from EXCLUDED: Citus allows only IMMUTABLE functions in the
// DO UPDATE SET of an insert into a distributed table.
inline constexpr const char kUpsertStagedJobStatsName[] = "belfry_upsert_staged_job_stats";
inline constexpr const char kUpsertStagedJobStatsSql[] =
    "INSERT INTO job_stats AS s (job_id, last_status, last_scheduled_for_ms, last_attempt, last_error,"
    " last_finished_at, consecutive_failures, total_succeeded, total_failed, last_success_scheduled_for_ms,"
    " updated_at) "
    "SELECT a.job_id, a.last_status, a.last_scheduled_for_ms, a.last_attempt, a.last_error,"
    " " BELFRY_MS_TO_TIMESTAMPTZ("a.last_finished_ms") ", a.consecutive_failures, a.total_succeeded,"
    " a.total_failed, a.last_success_scheduled_for_ms, now() "
    "FROM belfry_job_stats_stage AS a "
    "ON CONFLICT (job_id) DO UPDATE SET last_status = EXCLUDED.last_status,"
    " last_scheduled_for_ms = EXCLUDED.last_scheduled_for_ms, last_attempt = EXCLUDED.last_attempt,"
    " last_error = EXCLUDED.last_error, last_finished_at = EXCLUDED.last_finished_at,"
    " consecutive_failures = EXCLUDED.consecutive_failures, total_succeeded = EXCLUDED.total_succeeded,"
    " total_failed = EXCLUDED.total_failed,"
    " last_success_scheduled_for_ms = EXCLUDED.last_success_scheduled_for_ms, updated_at = EXCLUDED.updated_at";

// ---- Retries (docs/executions.md, "Retries"). ------------------------------------------------

// $1 = text[] of job ids with new failures. The retry settings and trigger fields of those that
// exist, are not paused and allow retries (retry rows themselves never do).
inline constexpr const char kRetryTargetsName[] = "belfry_retry_targets";
inline constexpr const char kRetryTargetsSql[] =
    "SELECT id, shard, owner, topic, key, details, interval_minutes, priority, max_retries,"
    " retry_initial_ms, retry_multiplier, retry_max_ms "
    "FROM jobs WHERE id = ANY ($1::text[]) AND NOT paused AND max_retries > 0 AND attempt = 0";

// $1 = JSON array of planned retries. A retry is placed in its planned minute, or later when its
// shard has already fired that minute or a live claim may already have queried it (the claim's
// claim_through), so that no firing can miss it: placement_next_minute is the next minute of the
// row that fires the planned minute (FiringShardRow), and during a reshard's cut-over
// (cutover_minute, NULL otherwise) stored_next_minute is the stored shard's, which fires the
// minutes from the cut-over on (BELFRY_ACROSS_CUTOVER; docs/resharding.md). Both as
// kLockPlacingShardStatesSql (pg_job_sql.h) read them, with the rows held until the
// commit; NULL when unset. The insert joins no shard_state: on Citus a join of shard_state on
// values of the JSON parameter is not co-located. Returns the rows actually inserted: a repeat
// (same id: same job, slot and attempt) inserts nothing.
inline constexpr const char kInsertRetriesName[] = "belfry_insert_retries";
inline constexpr const char kInsertRetriesSql[] =
    "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, owner, topic, key, details, priority,"
    " src_partition, src_offset, run_at, run_minute, scheduled_for_ms, attempt, retry_of) "
    "SELECT a.id, a.shard, a.interval_minutes, 0, a.owner, a.topic, a.key, a.details, a.priority, -1, -1,"
    " " BELFRY_MS_TO_TIMESTAMPTZ("a.run_at_ms") ","
    " " BELFRY_ACROSS_CUTOVER("GREATEST(a.run_minute, a.placement_next_minute)", "a.stored_next_minute") ","
    " a.scheduled_for_ms, a.attempt, a.retry_of "
    "FROM json_to_recordset($1::json) AS a(id text, shard smallint, interval_minutes int, owner text,"
    " topic text, key text, details text, priority int, run_at_ms bigint, run_minute bigint,"
    " scheduled_for_ms bigint, attempt int, retry_of text, placement_next_minute bigint,"
    " cutover_minute bigint, stored_next_minute bigint) "
    "ON CONFLICT DO NOTHING "
    "RETURNING id";

// $1 = JSON array of (job_id, scheduled_for_ms): the latest slot each job just succeeded for.
// Drops the job's scheduled retries of that slot or older ones (attempt > 0: not its pending
// manual triggers and backfill rows, which also have retry_of set).
inline constexpr const char kSupersedeRetriesName[] = "belfry_supersede_retries";
inline constexpr const char kSupersedeRetriesSql[] =
    "DELETE FROM jobs AS j "
    "USING json_to_recordset($1::json) AS a(job_id text, scheduled_for_ms bigint) "
    "WHERE j.retry_of = a.job_id AND j.attempt > 0 AND j.scheduled_for_ms <= a.scheduled_for_ms";

// History, newest first, keyset-paginated on the primary key (a backward index scan).
// $1 job, $2 limit, then the cursor ($3 scheduled_for_ms, $4 attempt, $5 status).
#define BELFRY_EXECUTION_COLUMNS                                                                           \
  "job_id, scheduled_for_ms, attempt, status, error, " BELFRY_TS_TO_MS("started_at") ", " BELFRY_TS_TO_MS( \
      "finished_at") ", worker, src_partition, src_offset, " BELFRY_TS_TO_MS("received_at")
inline constexpr const char kListExecutionsName[] = "belfry_list_executions";
inline constexpr const char kListExecutionsSql[] =
    "SELECT " BELFRY_EXECUTION_COLUMNS
    " FROM executions WHERE job_id = $1 "
    "ORDER BY scheduled_for_ms DESC, attempt DESC, status DESC LIMIT $2";
inline constexpr const char kListExecutionsAfterName[] = "belfry_list_executions_after";
inline constexpr const char kListExecutionsAfterSql[] =
    "SELECT " BELFRY_EXECUTION_COLUMNS
    " FROM executions WHERE job_id = $1 "
    "AND (scheduled_for_ms, attempt, status) < ($3::bigint, $4::int, $5::text) "
    "ORDER BY scheduled_for_ms DESC, attempt DESC, status DESC LIMIT $2";
#undef BELFRY_EXECUTION_COLUMNS

// The history sweep (migrations/0007_execution_partitions.sql, docs/executions.md "History"):
// $1 = now (epoch ms), $2 = retention (ms), $3 = days of partitions to create ahead of today.
// Creates the missing daily partitions, drops the ones wholly older than now - retention.
// Returns (created, dropped, default_rows_deleted).
inline constexpr const char kMaintainExecutionPartitionsName[] = "belfry_maintain_execution_partitions";
inline constexpr const char kMaintainExecutionPartitionsSql[] =
    "SELECT created, dropped, default_rows_deleted FROM belfry_execution_partitions($1::bigint, $2::bigint, "
    "$3::int)";

}  // namespace belfry::pg_queries

