// The command path's statements (src/pg/pg_job_store_commands.cc): staged upserts, deletes,
// pauses and resumes, and a resumed limited job's window.
#pragma once

#include "core/cron_key_stride.h"
#include "pg/pg_job_sql.h"

namespace belfry::pg_queries {

// ---- Command application (src/pg/pg_job_store.cc). -------------------------------------------
// Upserts are streamed with COPY into a per-session temporary staging table, then applied with
// two set-based statements that read it. Deletes and pause/resume take $1 = a JSON array of
// objects, one per action, read with json_to_recordset (json, not jsonb: json input only
// validates the text). Every write is guarded by the replay rule: nothing happens when the
// stored row came from the same partition at the same or a later offset (deletes: a strictly
// later offset). Every row carries the job's shard: jobs is partitioned by shard (migration
// 0005), and `j.shard = a.shard` lets each row be looked up in its own partition only (run-time
// pruning) instead of in all of them.
//
// Why staging rather than a JSON parameter for upserts: json_to_recordset decoded every upsert
// twice (once per statement), and each execution planned around a multi-megabyte constant; at
// 4000 upserts that was about half of the transaction's time (BENCHMARKS.md, "Commands").

// The staging table: session-local, not logged, emptied at every commit. Its rows exist only
// inside the transaction that applies one batch. Created on first use in each session (a
// temporary table cannot live in migrations/); belfry_upsert_stage_exists checks for it.
inline constexpr const char kUpsertStageTable[] = "belfry_upsert_stage";
// The COPY column order; PgJobStore writes each row's fields in this order. The last three place
// a one-shot (BELFRY_RUN_MINUTE; pg_job_sql.h, "Rows placed by a shard's progress"); NULL for
// other jobs.
// clang-format off
inline constexpr const char* kUpsertStageColumns[] = {
    "id", "shard", "interval_minutes", "offset_minutes", "keep_offset", "owner", "topic", "key",
    "details", "start_ms", "end_ms", "priority", "paused", "replace_fresh", "src_partition",
    "src_offset", "run_at_ms", "run_minute", "late_limit", "scheduled_for_ms", "max_retries",
    "retry_initial_ms", "retry_multiplier", "retry_max_ms", "cron_expr", "time_zone", "cron_codes",
    "hour_mask", "dom_mask", "month_mask", "dow_mask", "day_or", "offset_pinned", "pause_reason",
    "pause_actor", "max_fires", "fires_from_ms", "requested_end_ms", "requested_start_ms",
    "labels", "placement_next_minute", "stored_next_minute", "cutover_minute"};
// clang-format on
inline constexpr const char kCreateUpsertStageSql[] =
    "CREATE TEMPORARY TABLE belfry_upsert_stage (id text, shard smallint, interval_minutes int,"
    " offset_minutes int, keep_offset boolean, owner text, topic text, key text, details text,"
    " start_ms bigint, end_ms bigint, priority int, paused boolean, replace_fresh boolean,"
    " src_partition int, src_offset bigint, run_at_ms bigint, run_minute bigint, late_limit bigint,"
    " scheduled_for_ms bigint, max_retries int, retry_initial_ms bigint,"
    " retry_multiplier double precision, retry_max_ms bigint, cron_expr text, time_zone text,"
    " cron_codes int[], hour_mask int, dom_mask int, month_mask int, dow_mask int, day_or boolean,"
    " offset_pinned boolean, pause_reason text, pause_actor text, max_fires int, fires_from_ms bigint,"
    " requested_end_ms bigint, requested_start_ms bigint, labels text, placement_next_minute bigint,"
    " stored_next_minute bigint, cutover_minute bigint, applied_at timestamptz DEFAULT now())"
    " ON COMMIT DELETE ROWS";

// Run (SET LOCAL: this transaction only) before the staged statements. The staging table's row
// count is known to the planner (json_to_recordset's was a fixed guess of 100), and for a batch
// of thousands it prefers a hash join over a sequential scan of jobs: work proportional to the
// whole table on every batch (EXPLAIN ANALYZE, 4000 staged upserts against 20k jobs: 510 ms,
// against 232 ms for the nested loop; the scan grows with the table, the probes do not).
// On Citus the batch's statements run one connection per worker (multi_shard_modify_mode
// sequential): the slots' insert reads the jobs rows that the staged insert wrote, and Citus
// refuses a statement that reads placements a previous one modified over several connections
// ("cannot perform query with placements that were modified over multiple connections"). On a
// plain PostgreSQL the setting is an unused placeholder.
inline constexpr const char kStagedJoinSettingsSql[] =
    "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off;"
    " SET LOCAL citus.multi_shard_modify_mode = sequential";

inline constexpr const char kUpsertStageExistsName[] = "belfry_upsert_stage_exists";
inline constexpr const char kUpsertStageExistsSql[] =
    "SELECT to_regclass('pg_temp.belfry_upsert_stage') IS NOT NULL";

// a.applied_at (here and in the update) is the transaction's now(), which the stage's COPY fills
// in (the column's default): Citus refuses now() inside a CASE in a modification. Not a
// parameter, as kSetPausedSql's $2 is: the staged statements keep none, so PostgreSQL plans each
// once per connection, where a parameter has it plan the update on 121 partitions (about 12 ms)
// for each of a connection's first six batches before it settles on a generic plan.
// Returns the rows it created, as BELFRY_JOB_COLUMNS: the audit trail's after of a create, which
// needs neither a read before nor one after (issue 34).
// Prepared per session, after the staging table exists (PgJobStore::ApplyActions).
inline constexpr const char kInsertStagedJobsName[] = "belfry_insert_staged_jobs";
inline constexpr const char kInsertStagedJobsSql[] =
    "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, owner, topic, key, details,"
    " start_at, end_at, priority, paused, src_partition, src_offset, run_at, run_minute, scheduled_for_ms,"
    " max_retries, retry_initial_ms, retry_multiplier, retry_max_ms, cron_expr, time_zone, offset_pinned,"
    " pause_reason, pause_actor, paused_at, max_fires, fires_before, fires_from, requested_end_at,"
    " requested_start_at, labels) "
    "SELECT a.id, a.shard, a.interval_minutes, a.offset_minutes, a.owner, a.topic, a.key, a.details,"
    " " BELFRY_MS_TO_TIMESTAMPTZ("a.start_ms") ", " BELFRY_MS_TO_TIMESTAMPTZ("a.end_ms") ","
    " a.priority, COALESCE(a.paused, false), a.src_partition, a.src_offset,"
    " " BELFRY_MS_TO_TIMESTAMPTZ("a.run_at_ms") ", " BELFRY_RUN_MINUTE ", a.scheduled_for_ms,"
    " a.max_retries, a.retry_initial_ms, a.retry_multiplier, a.retry_max_ms, a.cron_expr, a.time_zone,"
    " a.offset_pinned,"
    " CASE WHEN a.paused THEN NULLIF(a.pause_reason, '') END, CASE WHEN a.paused THEN NULLIF(a.pause_actor, '') END,"
    " CASE WHEN a.paused THEN a.applied_at END,"
    " a.max_fires, 0, " BELFRY_MS_TO_TIMESTAMPTZ("a.fires_from_ms") ", " BELFRY_MS_TO_TIMESTAMPTZ("a.requested_end_ms") ","
    " " BELFRY_MS_TO_TIMESTAMPTZ("a.requested_start_ms") ", a.labels::jsonb "
    "FROM belfry_upsert_stage AS a "
    "ORDER BY a.shard, a.id "  // one partition after another: ~30% faster than id order
    "ON CONFLICT (id, shard) DO NOTHING "
    "RETURNING " BELFRY_JOB_COLUMNS;

// Step 2 of an upsert: replace existing rows. Runs after step 1 in the same transaction, so it
// also sees rows step 1 just inserted, which the replay guard skips (same source position).
// keep_offset = !replace_fresh && !offset_explicit; the stored offset survives only when the
// interval is unchanged, and with it whether it was pinned (JobSpec::offset_pinned). paused: the action's flag if given, else false for a fresh replacement,
// else the stored flag. SET expressions read the row's values from before this update.
inline constexpr const char kUpdateStagedJobsName[] = "belfry_update_staged_jobs";
inline constexpr const char kUpdateStagedJobsSql[] =
    "UPDATE jobs AS j SET"
    " interval_minutes = a.interval_minutes,"
    " offset_minutes = CASE WHEN a.keep_offset AND j.interval_minutes = a.interval_minutes"
    "   THEN j.offset_minutes ELSE a.offset_minutes END,"
    " offset_pinned = CASE WHEN a.keep_offset AND j.interval_minutes = a.interval_minutes"
    "   THEN j.offset_pinned ELSE a.offset_pinned END,"
    " owner = a.owner, topic = a.topic, key = a.key, details = a.details,"
    " start_at = " BELFRY_MS_TO_TIMESTAMPTZ("a.start_ms") ","
    " end_at = " BELFRY_MS_TO_TIMESTAMPTZ("a.end_ms") ","
    " priority = a.priority,"
    " paused = CASE WHEN a.paused IS NOT NULL THEN a.paused WHEN a.replace_fresh THEN false ELSE j.paused "
    "END,"
    // A pause's note follows the flag: set by a pause (paused_at kept if it already was paused),
    // cleared by a resume or a fresh replacement, kept by an upsert that leaves the flag alone.
    " pause_reason = CASE WHEN a.paused THEN NULLIF(a.pause_reason, '')"
    "   WHEN a.paused IS NOT NULL OR a.replace_fresh THEN NULL ELSE j.pause_reason END,"
    " pause_actor = CASE WHEN a.paused THEN NULLIF(a.pause_actor, '')"
    "   WHEN a.paused IS NOT NULL OR a.replace_fresh THEN NULL ELSE j.pause_actor END,"
    " paused_at = CASE WHEN a.paused THEN CASE WHEN j.paused THEN j.paused_at ELSE a.applied_at END"
    "   WHEN a.paused IS NOT NULL OR a.replace_fresh THEN NULL ELSE j.paused_at END,"
    " src_partition = a.src_partition, src_offset = a.src_offset,"
    " run_at = " BELFRY_MS_TO_TIMESTAMPTZ("a.run_at_ms") ","
    " run_minute = " BELFRY_RUN_MINUTE ","
    " scheduled_for_ms = a.scheduled_for_ms,"
    " max_retries = a.max_retries, retry_initial_ms = a.retry_initial_ms,"
    " retry_multiplier = a.retry_multiplier, retry_max_ms = a.retry_max_ms,"
    " cron_expr = a.cron_expr, time_zone = a.time_zone,"
    // Limited runs (migration 0012): an upsert restarts the count from its own timestamp.
    " max_fires = a.max_fires, fires_before = 0,"
    " fires_from = " BELFRY_MS_TO_TIMESTAMPTZ("a.fires_from_ms") ","
    " requested_end_at = " BELFRY_MS_TO_TIMESTAMPTZ("a.requested_end_ms") ","
    " requested_start_at = " BELFRY_MS_TO_TIMESTAMPTZ("a.requested_start_ms") ","
    " labels = a.labels::jsonb,"  // migration 0013"
    " created_at = CASE WHEN a.replace_fresh THEN a.applied_at ELSE j.created_at END,"
    " updated_at = a.applied_at "
    "FROM belfry_upsert_stage AS a "
    "WHERE j.shard = a.shard AND j.id = a.id"
    " AND NOT (j.src_partition = a.src_partition AND j.src_offset >= a.src_offset)";

// Calendar jobs (migration 0006, docs/calendar-schedules.md). Step 0 of an upsert: number the
// zones of the staged slot-planned cron jobs that are new to cron_zones. The stage is read in a
// subquery and the zones known already are left out by an anti-join: Citus joins a coordinator
// table (the stage) with a reference table only through a subquery, and runs no correlated
// subquery (NOT EXISTS) over one.
inline constexpr const char kRegisterStagedZonesName[] = "belfry_register_staged_zones";
inline constexpr const char kRegisterStagedZonesSql[] =
    "INSERT INTO cron_zones (name) "
    "SELECT DISTINCT a.time_zone FROM (SELECT time_zone FROM belfry_upsert_stage WHERE cron_codes IS NOT NULL) AS a"
    " LEFT JOIN cron_zones AS z ON z.name = a.time_zone WHERE z.name IS NULL "
    "ORDER BY 1 "
    "ON CONFLICT (name) DO NOTHING";

// Step 3 of an upsert: the slots of every staged row that this batch wrote (the row now carries
// the action's source position; a replayed or stale action wrote nothing and keeps its slots)
// are replaced: dropped, then re-created for slot-planned cron jobs. Probes cron_slots by
// (shard, job_id), so a batch of interval jobs costs one index probe per row.
inline constexpr const char kDeleteStagedSlotsName[] = "belfry_delete_staged_slots";
inline constexpr const char kDeleteStagedSlotsSql[] =
    "DELETE FROM cron_slots AS s "
    "USING belfry_upsert_stage AS a, jobs AS j "
    "WHERE s.shard = a.shard AND s.job_id = a.id"
    " AND j.shard = a.shard AND j.id = a.id"
    " AND j.src_partition = a.src_partition AND j.src_offset = a.src_offset";
inline constexpr const char kInsertStagedSlotsName[] = "belfry_insert_staged_slots";
inline constexpr const char kInsertStagedSlotsSql[] =
    "INSERT INTO cron_slots (shard, key, job_id, hour_mask, dom_mask, month_mask, dow_mask, day_or) "
    "SELECT a.shard, z.id::bigint * " BELFRY_STRINGIFY(BELFRY_CRON_KEY_STRIDE) " + c.code, a.id, a.hour_mask, a.dom_mask, a.month_mask, a.dow_mask,"
    " a.day_or "
    "FROM belfry_upsert_stage AS a"
    " JOIN jobs AS j ON j.shard = a.shard AND j.id = a.id"
    "  AND j.src_partition = a.src_partition AND j.src_offset = a.src_offset"
    " JOIN cron_zones AS z ON z.name = a.time_zone"
    " CROSS JOIN LATERAL unnest(a.cron_codes) AS c(code) "
    "WHERE a.cron_codes IS NOT NULL "
    "ON CONFLICT DO NOTHING";

// Deletes jobs with what belongs to them, in one statement: $1 = a JSON array of {id, shard,
// src_partition, src_offset}. Returns the (id, shard) of each job it deleted. A job that a later
// command of the same partition re-created keeps its row, and with it its slots, backfilled
// ranges and last delivery error; a job that is gone (deleted now, or absent already) loses them
// (its slots from cron_slots, migration 0006; its ranges, 0011; its delivery error, 0017: a new
// job of the same id starts with none). Its scheduled retries (rows of migration 0004, in its
// shard) are cancelled either way. On PostgreSQL every part reads the statement's one snapshot, so
// "gone" is "deleted by this statement, or not there before it"; one round trip, whatever the
// batch holds. Citus runs each part as a step of its own, so there "gone" may read jobs after the
// delete: the deleted ones (twice) and those not there, the same jobs, which the deletes that use
// it do not mind. "Not there" is the batch EXCEPT its jobs that are there (an inner join, which
// Citus sends to each shard with the batch): not NOT EXISTS, because Citus runs no correlated
// subquery over a CTE, and not an anti-join (LEFT JOIN ... IS NULL), because Citus cannot send an
// outer join whose outer side is the batch to the shards and pulls every (id, shard) of jobs to
// the coordinator instead (93 s and counting for one batch at 5M jobs, issue 36's side-by-side
// run).
inline constexpr const char kDeleteJobsAndTheirRowsName[] = "belfry_delete_jobs_and_their_rows";
inline constexpr const char kDeleteJobsAndTheirRowsSql[] =
    "WITH a AS MATERIALIZED ("
    "  SELECT * FROM json_to_recordset($1::json) AS a(id text, shard smallint, src_partition int, src_offset bigint)),"
    " d AS (DELETE FROM jobs AS j USING a WHERE j.shard = a.shard AND j.id = a.id"
    "   AND NOT (j.src_partition = a.src_partition AND j.src_offset > a.src_offset) RETURNING j.id, j.shard),"
    " gone AS MATERIALIZED (SELECT id, shard FROM d UNION ALL"
    "   (SELECT id, shard FROM a EXCEPT SELECT j.id, j.shard FROM jobs AS j JOIN a ON j.shard = a.shard AND j.id = a.id)),"
    " r AS (DELETE FROM jobs AS j USING a WHERE j.shard = a.shard AND j.retry_of = a.id),"
    " b AS (DELETE FROM backfills AS b USING gone AS g WHERE b.job_id = g.id),"
    " e AS (DELETE FROM trigger_delivery_errors AS e USING gone AS g WHERE e.job_id = g.id),"
    " s AS (DELETE FROM cron_slots AS s USING gone AS g WHERE s.shard = g.shard AND s.job_id = g.id) "
    "SELECT id, shard FROM d";

// A bulk operation's step (docs/bulk-operations.md) passes src_partition -1: the rows keep their
// own command position, so that a replay of their own older commands is still recognised.
// Returns the limited jobs (max_fires set) that this resumed from a pause, with the time the pause
// took effect and the resume command's timestamp ($1's ts): PgJobStore reads them
// (kReadResumedLimitedJobs), recomputes their window (core/fire_limit.h, ResumeFireLimit) and
// writes it (kSetFireLimits), two statements for all of them. `o` is the row as it was
// before this statement (a second reference to the updated table reads the statement's snapshot).
inline constexpr const char kSetPausedName[] = "belfry_set_paused";
inline constexpr const char kSetPausedSql[] =
    "WITH changed AS ("
    "UPDATE jobs AS j SET paused = a.paused,"
    " src_partition = CASE WHEN a.src_partition < 0 THEN j.src_partition ELSE a.src_partition END,"
    " src_offset = CASE WHEN a.src_partition < 0 THEN j.src_offset ELSE a.src_offset END,"
    " pause_reason = CASE WHEN a.paused THEN NULLIF(a.reason, '') END,"
    " pause_actor = CASE WHEN a.paused THEN NULLIF(a.actor, '') END,"
    " paused_at = CASE WHEN NOT a.paused THEN NULL WHEN j.paused THEN j.paused_at ELSE $2::timestamptz END,"
    " updated_at = $2::timestamptz "
    "FROM json_to_recordset($1::json) AS a(id text, shard smallint, paused boolean, src_partition int,"
    " src_offset bigint, reason text, actor text, ts bigint) "
    "JOIN jobs AS o ON o.shard = a.shard AND o.id = a.id "
    "WHERE j.shard = a.shard AND j.id = a.id"
    " AND NOT (j.src_partition = a.src_partition AND j.src_offset >= a.src_offset)"
    " RETURNING j.id, j.shard, j.max_fires, o.paused AS was_paused, NOT a.paused AS resumed,"
    " " BELFRY_TS_TO_MS("o.paused_at") " AS paused_at_ms, a.ts) "
    "SELECT id, shard, paused_at_ms, ts FROM changed"
    " WHERE resumed AND was_paused AND max_fires IS NOT NULL AND paused_at_ms IS NOT NULL";

// Limited jobs' counts and windows after a resume: $1 = a JSON array of {id, shard, fires_before,
// fires_from, start, end} (ms; end null for none).
inline constexpr const char kSetFireLimitsName[] = "belfry_set_fire_limits";
inline constexpr const char kSetFireLimitsSql[] =
    "UPDATE jobs AS j SET fires_before = a.fires_before,"
    " fires_from = " BELFRY_MS_TO_TIMESTAMPTZ("a.fires_from") ","
    " start_at = " BELFRY_MS_TO_TIMESTAMPTZ("a.start") ", end_at = " BELFRY_MS_TO_TIMESTAMPTZ("a.end") " "
    "FROM json_to_recordset($1::json) AS a(id text, shard smallint, fires_before int, fires_from bigint,"
    " start bigint, \"end\" bigint) "
    "WHERE j.shard = a.shard AND j.id = a.id";

}  // namespace belfry::pg_queries
