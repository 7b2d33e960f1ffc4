// Trigger and backfill commands (src/pg/pg_job_store_manual_fires.cc, docs/manual-fires.md).
#pragma once

#include "pg/pg_job_sql.h"

namespace belfry::pg_queries {

// ---- Manual fires: trigger and backfill commands (docs/manual-fires.md). ----------------------

// $1 job, $2 from_ms, $3 to_ms: the ranges of the job's earlier backfills that overlap [from, to).
inline constexpr const char kCoveredBackfillsName[] = "belfry_covered_backfills";
inline constexpr const char kCoveredBackfillsSql[] =
    "SELECT from_ms, to_ms FROM backfills WHERE job_id = $1 AND from_ms < $3::bigint AND to_ms > $2::bigint";

// $1 job, $2 from_ms, $3 to_ms, $4 slots, $5 rate, $6 src_partition, $7 src_offset.
inline constexpr const char kRecordBackfillName[] = "belfry_record_backfill";
inline constexpr const char kRecordBackfillSql[] =
    "INSERT INTO backfills (job_id, from_ms, to_ms, slots, rate_per_minute, src_partition, src_offset) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING";

// $1 = JSON array of (id, shard): the ids of those jobs that are stored in that shard. Trigger
// commands look their jobs up in one statement (PgJobStore::ApplyManualFires).
inline constexpr const char kJobsInTheirShardsName[] = "belfry_jobs_in_their_shards";
inline constexpr const char kJobsInTheirShardsSql[] =
    "SELECT j.id FROM json_to_recordset($1::json) AS a(id text, shard smallint) "
    "JOIN jobs AS j ON j.shard = a.shard AND j.id = a.id";


// $1 = JSON array of ManualRows, each naming its job and the job's shard: one-shot rows copied from the job's row
// (topic, key, details, priority, owner, interval), derived ids, retry_of = the job. A row goes
// to its planned minute, or, when the shard is past it (or a live claim may have queried it) by
// the time it is stored: a trigger to the shard's next minute while that is within its
// late_limit (else it stays in its past minute and never fires: BELFRY_RUN_MINUTE, the one-shots'
// rule); a backfill row
// (late_limit < 0) to the next minute plus its step, which keeps the backfill's pace. The shard's
// next minute is the row's placement_next_minute: that of the shard_state row that fires its
// planned minute (FiringShardRow), read by kLockPlacingShardStates (pg_job_sql.h), which the
// caller holds until the commit. During a cut-over
// (cutover_minute set) stored_next_minute is that of the stored shard's row (the join's `sn`).
// Returns the ids it inserted.
inline constexpr const char kInsertManualRowsName[] = "belfry_insert_manual_rows";
inline constexpr const char kInsertManualRowsSql[] =
    "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, owner, topic, key, details, priority,"
    " src_partition, src_offset, run_at, run_minute, scheduled_for_ms, retry_of) "
    "SELECT a.id, j.shard, j.interval_minutes, 0, j.owner, j.topic, j.key, j.details, j.priority,"
    " a.src_partition, a.src_offset, " BELFRY_MS_TO_TIMESTAMPTZ("a.scheduled_for_ms") ","
    " CASE WHEN a.late_limit < 0 THEN "
    BELFRY_ACROSS_CUTOVER("GREATEST(a.run_minute, a.placement_next_minute + a.step)",
                          "a.stored_next_minute + a.step")
    "  ELSE " BELFRY_RUN_MINUTE " END,"
    " a.scheduled_for_ms, j.id "
    "FROM json_to_recordset($1::json) AS a(id text, job_id text, shard smallint, run_minute bigint,"
    " late_limit bigint, step bigint, scheduled_for_ms bigint, src_partition int, src_offset bigint,"
    " placement_next_minute bigint, stored_next_minute bigint, cutover_minute bigint) "
    "JOIN jobs AS j ON j.shard = a.shard AND j.id = a.job_id "
    "ON CONFLICT DO NOTHING "
    "RETURNING id";

}  // namespace belfry::pg_queries
