// The tick query (src/pg/pg_due_query_stream.cc), read through cursors: the due jobs of one
// shard-minute, with calendar jobs once cron_zones has a zone, and the coalesced catch-up range.
#pragma once

#include "core/cron_key_stride.h"
#include "core/slot_math.h"  // BELFRY_MS_PER_MINUTE
#include "pg/pg_job_sql.h"

namespace belfry::pg_queries {

// ---- Tick query (src/pg/pg_due_query_stream.cc), read through cursors. ----------------------

// Normal firing of one shard-minute. $1 the stored shards as smallint[]: the shard, or during a
// reshard the partitions an old shard splits into (docs/resharding.md); $2 phases as bigint[]: interval*1440 + offset per
// due (interval, offset), and -M for the one-shots of minute M; $3 the slot, epoch ms. The slot is
// computed once, in an InitPlan, not per row. Index condition: (shard = $1) AND (phase = ANY ($2))
// on jobs_due_idx for priority = 0, on the partial jobs_due_high_idx / jobs_due_low_idx (which
// hold only prioritised jobs) for priority > 0 / < 0.
//
// Priority order without giving up streaming: a shard-minute is read as three statements, run one
// after the other: priority > 0 sorted (few rows, usually none), priority = 0 unsorted and
// streamed (nearly every row), priority < 0 sorted. See docs/executions.md, "Priority".
// scheduled_for_ms is NULL for interval jobs (the slot is the scheduledFor).
#define BELFRY_DUE_JOBS_SELECT(priority_cond) \
  "SELECT id, topic, key, details, interval_minutes, scheduled_for_ms "                               \
  "FROM jobs "                                                                                        \
  "WHERE shard = ANY ($1::smallint[]) AND phase = ANY ($2::bigint[]) AND NOT paused AND " priority_cond " "   \
  "AND (start_at IS NULL OR start_at <= (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$3::bigint") ")) "     \
  "AND (end_at IS NULL OR end_at > (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$3::bigint") "))"

inline constexpr const char kDueJobsSql[] = BELFRY_DUE_JOBS_SELECT("priority = 0");

// How the rows are fetched. A shard-minute runs in one READ ONLY transaction; each statement is
// a cursor, read kDueJobsFetchRows rows at a time, and COMMIT closes them. Memory stays bounded
// by one fetch (~2000 rows) whatever the shard-minute's size. This replaced libpq's single-row
// mode, which allocates a PGresult per row and copies the column descriptors into each one:
// ~8% of a firing node's CPU in a 5M-job burst (BENCHMARKS.md, third session, "Burst").
// One number for both, since a fetch shorter than kDueJobsFetchRows is how the end is detected.
#define BELFRY_DUE_FETCH_ROWS 2000
inline constexpr int kDueJobsFetchRows = BELFRY_DUE_FETCH_ROWS;
#define BELFRY_DUE_FETCH "FETCH FORWARD " BELFRY_STRINGIFY(BELFRY_DUE_FETCH_ROWS) " FROM "
// One cursor per statement of a shard-minute, each with its own name (COMMIT closes them all).
// explain_sql is the cursor's query under EXPLAIN (ANALYZE, BUFFERS), with the same parameters:
// `belfry explain` runs it instead of declaring the cursor (PgDueQueryStream::ExplainDueQuery),
// so the plan it shows is the tick's, statement for statement.
struct DueCursor {
  const char* declare_sql;
  const char* fetch_sql;
  const char* explain_sql;
  const char* title;  // what the statement reads, for explain's output
};
#define BELFRY_DUE_CURSOR(name, select, title) \
  {"DECLARE " name " NO SCROLL CURSOR FOR " select, BELFRY_DUE_FETCH name, "EXPLAIN (ANALYZE, BUFFERS) " select, title}
inline constexpr DueCursor kDueJobsCursor =
    BELFRY_DUE_CURSOR("belfry_due", BELFRY_DUE_JOBS_SELECT("priority = 0"), "priority = 0");
inline constexpr DueCursor kDueJobsHighCursor = BELFRY_DUE_CURSOR(
    "belfry_due_high", BELFRY_DUE_JOBS_SELECT("priority > 0") " ORDER BY priority DESC", "priority > 0");
inline constexpr DueCursor kDueJobsLowCursor = BELFRY_DUE_CURSOR(
    "belfry_due_low", BELFRY_DUE_JOBS_SELECT("priority < 0") " ORDER BY priority DESC", "priority < 0");

// ---- The same with calendar (cron) jobs: used once cron_zones has a zone. ----------------------
// The interval statement above, UNION ALL the cron jobs of the shard-minute: $4 keys (bigint[]),
// $5 / $6 / $7 / $8 the bits of each key's local hour and date (1 << hour, 1 << day-of-month,
// 1 << month, 1 << weekday), from AppendCalendarTerms (src/core/calendar_schedule.h). Each key is one probe
// of cron_slots' primary key (shard, key, ...); a job that several keys find (the skipped local
// times of a spring-forward gap) fires once (DISTINCT). Its row is then read by primary key.
#define BELFRY_CRON_DAY_MATCH                                                        \
  "(s.hour_mask & k.hour_bit) <> 0 AND (s.month_mask & k.month_bit) <> 0"            \
  " AND CASE WHEN s.day_or"                                                          \
  " THEN ((s.dom_mask & k.dom_bit) <> 0 OR (s.dow_mask & k.dow_bit) <> 0)"           \
  " ELSE ((s.dom_mask & k.dom_bit) <> 0 AND (s.dow_mask & k.dow_bit) <> 0) END"
#define BELFRY_CRON_DUE_SELECT(priority_cond)                                                                  \
  "SELECT j.id, j.topic, j.key, j.details, j.interval_minutes, j.scheduled_for_ms, j.priority "                 \
  "FROM (SELECT DISTINCT s.job_id"                                                                             \
  "  FROM unnest($4::bigint[], $5::int[], $6::int[], $7::int[], $8::int[])"                                   \
  "    AS k(key, hour_bit, dom_bit, month_bit, dow_bit)"                                                        \
  "  JOIN cron_slots AS s ON s.shard = ANY ($1::smallint[]) AND s.key = k.key"                                         \
  "  WHERE " BELFRY_CRON_DAY_MATCH ") AS c "                                                                    \
  "JOIN jobs AS j ON j.shard = ANY ($1::smallint[]) AND j.id = c.job_id "                                              \
  "WHERE NOT j.paused AND j." priority_cond " "                                                                 \
  "AND (j.start_at IS NULL OR j.start_at <= (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$3::bigint") ")) "           \
  "AND (j.end_at IS NULL OR j.end_at > (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$3::bigint") "))"
#define BELFRY_DUE_JOBS_SELECT_PRIORITY(priority_cond)                                                        \
  "SELECT id, topic, key, details, interval_minutes, scheduled_for_ms, priority "                             \
  "FROM jobs "                                                                                                \
  "WHERE shard = ANY ($1::smallint[]) AND phase = ANY ($2::bigint[]) AND NOT paused AND " priority_cond " "           \
  "AND (start_at IS NULL OR start_at <= (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$3::bigint") ")) "             \
  "AND (end_at IS NULL OR end_at > (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$3::bigint") "))"
#define BELFRY_DUE_WITH_CRON_SORTED(priority_cond)                                         \
  "SELECT id, topic, key, details, interval_minutes, scheduled_for_ms FROM ("               \
  BELFRY_DUE_JOBS_SELECT_PRIORITY(priority_cond) " UNION ALL " BELFRY_CRON_DUE_SELECT(priority_cond) \
  ") AS due ORDER BY priority DESC"

inline constexpr DueCursor kDueJobsWithCronCursor = BELFRY_DUE_CURSOR(
    "belfry_due",
    BELFRY_DUE_JOBS_SELECT("priority = 0") " UNION ALL SELECT id, topic, key, details, interval_minutes, "
                                           "scheduled_for_ms FROM (" BELFRY_CRON_DUE_SELECT("priority = 0") ") AS cron",
    "priority = 0, interval and calendar jobs");
inline constexpr DueCursor kDueJobsHighWithCronCursor = BELFRY_DUE_CURSOR(
    "belfry_due_high", BELFRY_DUE_WITH_CRON_SORTED("priority > 0"), "priority > 0, interval and calendar jobs");
inline constexpr DueCursor kDueJobsLowWithCronCursor = BELFRY_DUE_CURSOR(
    "belfry_due_low", BELFRY_DUE_WITH_CRON_SORTED("priority < 0"), "priority < 0, interval and calendar jobs");

// Which zones cron jobs use. Read in the tick's own snapshot (REPEATABLE READ), before the
// due statements: every cron job the statements can see has its zone in what this returns.
#define BELFRY_COUNT_CRON_ZONES "SELECT count(*) FROM cron_zones"
inline constexpr const char kCountCronZonesSql[] = BELFRY_COUNT_CRON_ZONES;
// The tick's snapshot begins with that count, in the same round trip (issue 34): one simple-query
// message of two statements, whose result is the count's.
inline constexpr const char kBeginTickSnapshotSql[] = "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ; " BELFRY_COUNT_CRON_ZONES;
// `belfry explain`'s snapshot: the same, with Citus's local execution off. On Citus the zone count
// reads the coordinator's own placement of the reference table (local execution), after which
// Citus refuses the parallel execution that EXPLAIN ANALYZE of the due statements needs. On a
// plain PostgreSQL the setting is an unused placeholder.
inline constexpr const char kBeginExplainSnapshotSql[] =
    "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ; SET LOCAL citus.enable_local_execution = off; "
    BELFRY_COUNT_CRON_ZONES;
#undef BELFRY_COUNT_CRON_ZONES
inline constexpr const char kListCronZonesSql[] = "SELECT id, name FROM cron_zones ORDER BY id";
// The slot-planned calendar jobs of the zones this process's tz database lacks, per zone: a tick
// cannot compute those zones' keys, so it skips their jobs, and counts them with this
// (docs/calendar-schedules.md, "A zone this node does not know"). Run only when there is such a
// zone, in the tick's snapshot. $1 the stored shards (smallint[]), $2 the zone ids (int[]). A
// zone's keys are one range of cron_slots' primary key: [id * stride, (id + 1) * stride), the stride
// being BELFRY_CRON_KEY_STRIDE (src/core/cron_key_stride.h).
inline constexpr const char kCountUnknownZoneJobsSql[] =
    "SELECT z.id, count(DISTINCT s.job_id) FROM unnest($2::int[]) AS z(id) "
    "JOIN cron_slots AS s ON s.shard = ANY ($1::smallint[]) "
    "AND s.key >= z.id::bigint * " BELFRY_STRINGIFY(BELFRY_CRON_KEY_STRIDE) " AND s.key < (z.id::bigint + 1) * " BELFRY_STRINGIFY(BELFRY_CRON_KEY_STRIDE) " "
    "GROUP BY z.id";

#undef BELFRY_DUE_WITH_CRON_SORTED
#undef BELFRY_DUE_JOBS_SELECT_PRIORITY
#undef BELFRY_CRON_DUE_SELECT
#undef BELFRY_DUE_JOBS_SELECT

// Coalesced catch-up over minutes [$3, $4] of shard $1. $2 phases due at least once in the range,
// $5 the slot's offset within its minute (shard * tick_ms). $2 also holds -m for every minute m of
// the range, so one-shots of the range come back, with due_minute = run_minute. Rows are ordered
// by priority (a sort over the range: catch-up only). Each interval job comes back once, with
// due_minute = the latest minute M in [$3, $4] with M = offset (mod interval) whose slot
// M*60000 + $5 satisfies start_at <= slot < end_at; jobs with no such minute are left out.
//   cap          = min($4, last minute whose slot is before end_at)
//   start_minute = first minute whose slot is at or after start_at
//   due_minute   = cap - ((cap - offset) mod interval)
#define BELFRY_DUE_RANGE_SELECT                                                                            \
    "SELECT id, topic, key, details, interval_minutes, scheduled_for_ms, due_minute, priority FROM ("          \
    "  SELECT id, topic, key, details, interval_minutes, scheduled_for_ms, start_minute, priority," \
    "    CASE WHEN run_minute IS NOT NULL THEN run_minute" \
    "      ELSE cap - ((cap - offset_minutes) % interval_minutes + interval_minutes) % interval_minutes" \
    "    END AS due_minute" \
    "  FROM (" \
    "    SELECT id, topic, key, details, interval_minutes, offset_minutes, run_minute, scheduled_for_ms," \
    "      priority," \
    "      CASE WHEN end_at IS NULL THEN $4::bigint" \
    "        ELSE LEAST($4::bigint," \
    "                   ceil((extract(epoch FROM end_at) * 1000 - $5::bigint) / " BELFRY_STRINGIFY(BELFRY_MS_PER_MINUTE) ")::bigint - 1)" \
    "      END AS cap," \
    "      ceil((extract(epoch FROM start_at) * 1000 - $5::bigint) / " BELFRY_STRINGIFY(BELFRY_MS_PER_MINUTE) ")::bigint AS start_minute" \
    "    FROM jobs" \
    "    WHERE shard = ANY ($1::smallint[]) AND phase = ANY ($2::bigint[]) AND NOT paused" \
    "    OFFSET 0" /* keeps cap computed once per row instead of inlined into every use */ \
    "  ) AS bounded" \
    ") AS due " \
    "WHERE due_minute >= $3::bigint AND (start_minute IS NULL OR due_minute >= start_minute)"

inline constexpr DueCursor kDueJobsRangeCursor = BELFRY_DUE_CURSOR(
    "belfry_due_range",
    "SELECT id, topic, key, details, interval_minutes, scheduled_for_ms, due_minute FROM ("
    BELFRY_DUE_RANGE_SELECT ") AS r ORDER BY priority DESC",
    "coalesced range, sorted by priority");

// The same with cron jobs: $6 keys, $7 / $8 / $9 / $10 hour and day bits, $11 the UTC minute of
// each key (all the minutes of [$3, $4], from AppendCalendarTerms). Each cron job due at least once comes
// back once, at its latest minute whose slot is within start_at / end_at.
inline constexpr DueCursor kDueJobsRangeWithCronCursor = BELFRY_DUE_CURSOR(
    "belfry_due_range",
    "SELECT id, topic, key, details, interval_minutes, scheduled_for_ms, due_minute FROM ("
    BELFRY_DUE_RANGE_SELECT
    " UNION ALL ("
    "  SELECT DISTINCT ON (j.id) j.id, j.topic, j.key, j.details, j.interval_minutes, j.scheduled_for_ms,"
    "    c.minute AS due_minute, j.priority"
    "  FROM (SELECT s.job_id, k.minute"
    "    FROM unnest($6::bigint[], $7::int[], $8::int[], $9::int[], $10::int[], $11::bigint[])"
    "      AS k(key, hour_bit, dom_bit, month_bit, dow_bit, minute)"
    "    JOIN cron_slots AS s ON s.shard = ANY ($1::smallint[]) AND s.key = k.key"
    "    WHERE " BELFRY_CRON_DAY_MATCH ") AS c"
    "  JOIN jobs AS j ON j.shard = ANY ($1::smallint[]) AND j.id = c.job_id"
    "  WHERE NOT j.paused"
    "    AND (j.start_at IS NULL OR j.start_at <= " BELFRY_MS_TO_TIMESTAMPTZ("c.minute * " BELFRY_STRINGIFY(BELFRY_MS_PER_MINUTE) " + $5::bigint") ")"
    "    AND (j.end_at IS NULL OR j.end_at > " BELFRY_MS_TO_TIMESTAMPTZ("c.minute * " BELFRY_STRINGIFY(BELFRY_MS_PER_MINUTE) " + $5::bigint") ")"
    "  ORDER BY j.id, c.minute DESC)"
    ") AS r ORDER BY priority DESC",
    "coalesced range, interval and calendar jobs, sorted by priority");

#undef BELFRY_DUE_RANGE_SELECT
#undef BELFRY_CRON_DAY_MATCH

#undef BELFRY_DUE_CURSOR
#undef BELFRY_DUE_FETCH
#undef BELFRY_DUE_FETCH_ROWS

}  // namespace belfry::pg_queries
