// The load projection's and a rebalance proposal's full reads (src/pg/pg_job_store_load.cc).
#pragma once

#include "pg/pg_job_sql.h"

namespace belfry::pg_queries {

// ---- Load projection (PgJobStore::ReadLoadGroups, core/load_projection.h). -------------------
// Every unpaused job that may fire in a window, grouped by what decides when it fires, counted.
// $1 the window's first minute in epoch ms, $2 the end of its last minute (exclusive), $3 / $4
// the first and last minute (the job groups only: one-shots); the last parameter caps the rows
// (LoadGroupQuery::max_groups, plus one to see that it was exceeded). A start at or before $1, or an end at or after $2, cannot matter in
// the window and is read as NULL, so jobs that differ only there share a group. One full read of
// jobs (and of cron_slots), for operators: never on the trigger path.
#define BELFRY_LOAD_DATES                                                                            \
  "CASE WHEN j.start_at <= (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$1::bigint") ") THEN NULL"           \
  " ELSE " BELFRY_TS_TO_MS("j.start_at") " END, "                               \
  "CASE WHEN j.end_at >= (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$2::bigint") ") THEN NULL"             \
  " ELSE " BELFRY_TS_TO_MS("j.end_at") " END"
#define BELFRY_LOAD_WITHIN                                                                             \
  "NOT j.paused AND (j.start_at IS NULL OR j.start_at < (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$2::bigint") ")) " \
  "AND (j.end_at IS NULL OR j.end_at > (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$1::bigint") "))"
// Interval jobs (calendar jobs stored as intervals among them), one-shots and stored retries:
// shard, interval, offset, run_minute (NULL: interval), start, end, label, jobs.
#define BELFRY_LOAD_JOB_GROUPS(label)                                                                \
  "SELECT j.shard, j.interval_minutes, j.offset_minutes, j.run_minute, " BELFRY_LOAD_DATES ", "      \
  label ", count(*) FROM jobs AS j WHERE " BELFRY_LOAD_WITHIN " "                                    \
  "AND ((j.run_minute IS NULL AND j.interval_minutes > 0) OR j.run_minute BETWEEN $3::bigint AND $4::bigint) " \
  "GROUP BY 1, 2, 3, 4, 5, 6, 7 LIMIT $5::bigint"
// Slot-planned calendar jobs: shard, keys ("k1,k2,..."), the masks (one set per job), start,
// end, label, jobs.
#define BELFRY_LOAD_CALENDAR_GROUPS(label)                                                           \
  "SELECT s.shard, s.keys, s.hour_mask, s.dom_mask, s.month_mask, s.dow_mask, s.day_or, "           \
  BELFRY_LOAD_DATES ", " label ", count(*) "                                                         \
  "FROM (SELECT shard, job_id, array_to_string(array_agg(key ORDER BY key), ',') AS keys, "          \
  "min(hour_mask) AS hour_mask, min(dom_mask) AS dom_mask, min(month_mask) AS month_mask, "          \
  "min(dow_mask) AS dow_mask, bool_and(day_or) AS day_or FROM cron_slots GROUP BY shard, job_id) AS s " \
  "JOIN jobs AS j ON j.shard = s.shard AND j.id = s.job_id WHERE " BELFRY_LOAD_WITHIN " "            \
  "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 LIMIT $3::bigint"
// The load reads' own bound on each statement (SET LOCAL: their transaction only), in place of
// admin.statement_timeout, which is sized for single-job reads.
inline constexpr const char kLoadStatementTimeoutSql[] = "SET LOCAL statement_timeout = '120s'";
// And a plan made for the parameters' values: the admin sessions force generic plans (the
// partitions' planning cost, issue 16), and Citus cannot plan these multi-shard reads without
// the values ("could not create distributed plan", GET /v1/load on the cluster). A full read
// costs seconds; planning it per call costs nothing beside that.
inline constexpr const char kLoadCustomPlanSql[] = "SET LOCAL plan_cache_mode = force_custom_plan";
// [0]: no breakdown, [1]: by owner, [2]: by topic, [3]: by a label's value.
// [3]: by the value of one label, whose key is the statement's last parameter ($6 and $4).
inline constexpr const char* kLoadJobGroupsSql[] = {
    BELFRY_LOAD_JOB_GROUPS("''"), BELFRY_LOAD_JOB_GROUPS("coalesce(j.owner, '')"),
    BELFRY_LOAD_JOB_GROUPS("j.topic"), BELFRY_LOAD_JOB_GROUPS("coalesce(j.labels ->> $6::text, '')")};
inline constexpr const char* kLoadCalendarGroupsSql[] = {
    BELFRY_LOAD_CALENDAR_GROUPS("''"), BELFRY_LOAD_CALENDAR_GROUPS("coalesce(j.owner, '')"),
    BELFRY_LOAD_CALENDAR_GROUPS("j.topic"), BELFRY_LOAD_CALENDAR_GROUPS("coalesce(j.labels ->> $4::text, '')")};
#undef BELFRY_LOAD_CALENDAR_GROUPS
#undef BELFRY_LOAD_JOB_GROUPS
#undef BELFRY_LOAD_WITHIN
#undef BELFRY_LOAD_DATES

// Rebalance (core/load_rebalance.h): the unpaused interval jobs by (interval, offset), pinned or
// movable; and a few movable ids of one (interval, offset), as examples of a proposed move.
inline constexpr const char kOffsetLoadsSql[] =
    "SELECT interval_minutes, offset_minutes, count(*) FILTER (WHERE offset_pinned),"
    " count(*) FILTER (WHERE NOT offset_pinned) "
    "FROM jobs WHERE NOT paused AND run_minute IS NULL AND interval_minutes > 0 GROUP BY 1, 2";
inline constexpr const char kMovableJobIdsSql[] =
    "SELECT id FROM jobs WHERE interval_minutes = $1::int AND offset_minutes = $2::int AND NOT offset_pinned"
    " AND NOT paused AND run_minute IS NULL LIMIT $3::int";

}  // namespace belfry::pg_queries
