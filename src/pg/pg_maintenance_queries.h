// Background upkeep (src/pg/pg_job_store_maintenance.cc): the re-plan of calendar jobs after a
// tzdata change, and the one-shot retention sweep.
#pragma once

#include "core/cron_key_stride.h"
#include "pg/pg_job_sql.h"

namespace belfry::pg_queries {

// ---- Re-planning calendar jobs after a tzdata change (PgJobStore::ReplanCalendarJobs). --------
// Only a calendar job stored as a fixed UTC interval depends on its zone's offsets; one with
// cron_slots is keyed by local time and never needs re-planning.
inline constexpr const char kTzdataVersionName[] = "belfry_tzdata_version";
inline constexpr const char kTzdataVersionSql[] = "SELECT value FROM belfry_meta WHERE key = 'tzdata_version'";
inline constexpr const char kSetTzdataVersionName[] = "belfry_set_tzdata_version";
inline constexpr const char kSetTzdataVersionSql[] =
    "INSERT INTO belfry_meta (key, value) VALUES ('tzdata_version', $1) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";
inline constexpr const char kIntervalCalendarJobsName[] = "belfry_interval_calendar_jobs";
inline constexpr const char kIntervalCalendarJobsSql[] =
    "SELECT id, shard, cron_expr, time_zone, interval_minutes, offset_minutes "
    "FROM jobs WHERE cron_expr IS NOT NULL AND interval_minutes > 0";
// $1 shard, $2 id, $3 interval, $4 offset; only if the row still holds $5 expression in $6 zone
// (a command applied meanwhile wins).
inline constexpr const char kReplanJobName[] = "belfry_replan_job";
inline constexpr const char kReplanJobSql[] =
    "UPDATE jobs SET interval_minutes = $3::int, offset_minutes = $4::int, updated_at = now() "
    "WHERE shard = $1::smallint AND id = $2 AND cron_expr = $5 AND time_zone = $6";
inline constexpr const char kRegisterZoneName[] = "belfry_register_zone";
inline constexpr const char kRegisterZoneSql[] =
    "INSERT INTO cron_zones (name) SELECT $1 WHERE NOT EXISTS (SELECT 1 FROM cron_zones WHERE name = $1) "
    "ON CONFLICT (name) DO NOTHING";
// $1 shard, $2 id, $3 codes int[], $4 hour, $5 dom, $6 month, $7 dow masks, $8 day_or, $9 zone.
inline constexpr const char kInsertJobSlotsName[] = "belfry_insert_job_slots";
inline constexpr const char kInsertJobSlotsSql[] =
    "INSERT INTO cron_slots (shard, key, job_id, hour_mask, dom_mask, month_mask, dow_mask, day_or) "
    "SELECT $1::smallint, z.id::bigint * " BELFRY_STRINGIFY(BELFRY_CRON_KEY_STRIDE) " + c.code, $2, $4::int, $5::int, $6::int, $7::int, $8::boolean "
    "FROM cron_zones AS z CROSS JOIN unnest($3::int[]) AS c(code) WHERE z.name = $9 "
    "ON CONFLICT DO NOTHING";

// The retention sweep: deletes up to $2 one-shots whose run_minute is before $1, and their last
// delivery errors (migration 0017). Returns one row per one-shot deleted.
inline constexpr const char kSweepOneShotsName[] = "belfry_sweep_one_shots";
inline constexpr const char kSweepOneShotsSql[] =
    "WITH swept AS ("
    "  DELETE FROM jobs WHERE (shard, id) IN ("
    "    SELECT shard, id FROM jobs WHERE run_minute IS NOT NULL AND run_minute < $1::bigint LIMIT $2::int)"
    "  RETURNING id), "
    "errors AS (DELETE FROM trigger_delivery_errors WHERE job_id IN (SELECT id FROM swept)) "
    "SELECT id FROM swept";

}  // namespace belfry::pg_queries
