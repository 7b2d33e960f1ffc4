// Every SQL statement belfry runs, as named constants with $n parameters. Values are always bound
// as parameters, never spliced into the text. The schema itself lives only in migrations/.
//
// Timestamps cross the wire as epoch milliseconds (bigint), converted in SQL. Both directions are
// exact for every date belfry accepts (years 1970..9999): see BELFRY_MS_TO_TIMESTAMPTZ, and
// floor(extract(epoch ...) * 1000) on the way back (extract returns numeric since PostgreSQL 14).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

// The timestamptz of `ms` epoch milliseconds. Whole seconds go through to_timestamp, where
// seconds * 1e6 is exact in a double; the naive ms * interval '1 millisecond' is not beyond ~2255.
// Only pure time intervals are added, so the session's TimeZone plays no part.
#define BELFRY_MS_TO_TIMESTAMPTZ(ms) \
  "(to_timestamp((" ms ") / 1000) + ((" ms ") % 1000) * interval '1 millisecond')"

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
#define BELFRY_STRINGIFY_(x) #x
#define BELFRY_STRINGIFY(x) BELFRY_STRINGIFY_(x)
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
#undef BELFRY_COUNT_CRON_ZONES
inline constexpr const char kListCronZonesSql[] = "SELECT id, name FROM cron_zones ORDER BY id";
// The slot-planned calendar jobs of the zones this process's tz database lacks, per zone: a tick
// cannot compute those zones' keys, so it skips their jobs, and counts them with this
// (docs/calendar-schedules.md, "A zone this node does not know"). Run only when there is such a
// zone, in the tick's snapshot. $1 the stored shards (smallint[]), $2 the zone ids (int[]). A
// zone's keys are one range of cron_slots' primary key: [id * 2048, (id + 1) * 2048), 2048 being
// kCronKeyStride (src/core/calendar_schedule.h).
inline constexpr const char kCountUnknownZoneJobsSql[] =
    "SELECT z.id, count(DISTINCT s.job_id) FROM unnest($2::int[]) AS z(id) "
    "JOIN cron_slots AS s ON s.shard = ANY ($1::smallint[]) "
    "AND s.key >= z.id::bigint * 2048 AND s.key < (z.id::bigint + 1) * 2048 "
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
    "                   ceil((extract(epoch FROM end_at) * 1000 - $5::bigint) / 60000)::bigint - 1)" \
    "      END AS cap," \
    "      ceil((extract(epoch FROM start_at) * 1000 - $5::bigint) / 60000)::bigint AS start_minute" \
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
    "    AND (j.start_at IS NULL OR j.start_at <= " BELFRY_MS_TO_TIMESTAMPTZ("c.minute * 60000 + $5::bigint") ")"
    "    AND (j.end_at IS NULL OR j.end_at > " BELFRY_MS_TO_TIMESTAMPTZ("c.minute * 60000 + $5::bigint") ")"
    "  ORDER BY j.id, c.minute DESC)"
    ") AS r ORDER BY priority DESC",
    "coalesced range, interval and calendar jobs, sorted by priority");

#undef BELFRY_DUE_RANGE_SELECT
#undef BELFRY_CRON_DAY_MATCH

#undef BELFRY_DUE_CURSOR
#undef BELFRY_DUE_FETCH
#undef BELFRY_STRINGIFY
#undef BELFRY_STRINGIFY_
#undef BELFRY_DUE_FETCH_ROWS

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
// The COPY column order; PgJobStore writes each row's fields in this order.
// clang-format off
inline constexpr const char* kUpsertStageColumns[] = {
    "id", "shard", "interval_minutes", "offset_minutes", "keep_offset", "owner", "topic", "key",
    "details", "start_ms", "end_ms", "priority", "paused", "replace_fresh", "src_partition",
    "src_offset", "run_at_ms", "run_minute", "late_limit", "scheduled_for_ms", "max_retries",
    "retry_initial_ms", "retry_multiplier", "retry_max_ms", "cron_expr", "time_zone", "cron_codes",
    "hour_mask", "dom_mask", "month_mask", "dow_mask", "day_or", "offset_pinned", "pause_reason",
    "pause_actor", "max_fires", "fires_from_ms", "requested_end_ms", "requested_start_ms",
    "labels", "placement_shard", "cutover_minute"};
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
    " requested_end_ms bigint, requested_start_ms bigint, labels text, placement_shard smallint,"
    " cutover_minute bigint) ON COMMIT DELETE ROWS";

// Run (SET LOCAL: this transaction only) before the staged statements. The staging table's row
// count is known to the planner (json_to_recordset's was a fixed guess of 100), and for a batch
// of thousands it prefers a hash join over a sequential scan of jobs: work proportional to the
// whole table on every batch (EXPLAIN ANALYZE, 4000 staged upserts against 20k jobs: 510 ms,
// against 232 ms for the nested loop; the scan grows with the table, the probes do not).
inline constexpr const char kStagedJoinSettingsSql[] =
    "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off";

inline constexpr const char kUpsertStageExistsName[] = "belfry_upsert_stage_exists";
inline constexpr const char kUpsertStageExistsSql[] =
    "SELECT to_regclass('pg_temp.belfry_upsert_stage') IS NOT NULL";

// $1 = smallint[] of shards, sorted (a fixed lock order). Taken before rows are placed by the
// shard's progress (one-shot commands, retries) and held until commit: no firing can claim those
// shards between the placement read and the commit, so a firing either is visible to the
// placement (fired_through, or a live claim's claim_through) or sees the committed row.
inline constexpr const char kLockShardStatesName[] = "belfry_lock_shard_states";
inline constexpr const char kLockShardStatesSql[] =
    "SELECT shard FROM shard_state WHERE shard = ANY ($1::smallint[]) ORDER BY shard FOR SHARE";

// The first minute a new row of a shard can still be fired in: after what it has fired and after
// what a live claim covers (that firing's query may already have run). NULL when neither is set.
// Left defined at the end of this file: pg_execution_queries.h uses it too.
// The shard_state row whose progress places a one-shot row: a.placement_shard, the row that
// fires its minute (FiringShardRow, core/shard_layout.h: the stored shard, except while a
// reshard's old layout fires that minute, when the old shard does; docs/resharding.md).
// During a cut-over (a.cutover_minute, NULL otherwise) the row of the stored shard, a.shard,
// fires the minutes from the cut-over on: `sn`.
#define BELFRY_FIRING_SHARD_STATE_JOIN                               \
  " LEFT JOIN shard_state AS ss ON ss.shard = a.placement_shard"     \
  " LEFT JOIN shard_state AS sn ON sn.shard = a.shard AND a.cutover_minute IS NOT NULL "

#define BELFRY_NEXT_MINUTE_OF(s) \
  "GREATEST(" s ".fired_through + 1, CASE WHEN " s ".claim_until > now() THEN " s ".claim_through + 1 END)"
#define BELFRY_SHARD_NEXT_MINUTE BELFRY_NEXT_MINUTE_OF("ss")
#define BELFRY_STORED_SHARD_NEXT_MINUTE BELFRY_NEXT_MINUTE_OF("sn")

// A minute `x` placed by the progress of the row that fires the planned minute, `ss`. When that
// was the old layout's row and `x` reached the cut-over, the new row fires it: `x` moves on by
// that row's progress too (`y`), so that a row is never stored in a minute its firing shard has
// already fired (docs/resharding.md).
#define BELFRY_ACROSS_CUTOVER(x, y) \
  "CASE WHEN a.cutover_minute IS NOT NULL AND " x " >= a.cutover_minute THEN GREATEST(" x ", " y ") ELSE " x " END"

// A one-shot's run_minute: the action's, unless its shard has fired that minute, or is firing it,
// by the time the command is applied, and the shard's next minute is within the action's
// late_limit (see OneShotPlacement); NULL for interval jobs. ApplyActions holds the shards' rows
// (kLockShardStates) from before this read until the commit.
// (Like a retry's GREATEST(run_minute, next minute), but only a next minute within late_limit;
// GREATEST ignores the NULL of one that is not.)
#define BELFRY_WITHIN_LATE_LIMIT(next) "CASE WHEN " next " <= a.late_limit THEN " next " END"
#define BELFRY_RUN_MINUTE                                                                               \
  "CASE WHEN a.run_minute IS NULL THEN NULL ELSE "                                                      \
  BELFRY_ACROSS_CUTOVER("GREATEST(a.run_minute, " BELFRY_WITHIN_LATE_LIMIT(BELFRY_SHARD_NEXT_MINUTE) ")", \
                        BELFRY_WITHIN_LATE_LIMIT(BELFRY_STORED_SHARD_NEXT_MINUTE))                      \
  " END"

// Column order is decoded by PgJobStore's row reader; keep the two in step.
#define BELFRY_JOB_COLUMNS                                                                                 \
  "id, owner, interval_minutes, offset_minutes, shard, topic, key, details,"                               \
  " floor(extract(epoch FROM start_at) * 1000)::bigint, floor(extract(epoch FROM end_at) * 1000)::bigint," \
  " priority, paused, floor(extract(epoch FROM created_at) * 1000)::bigint,"                               \
  " floor(extract(epoch FROM updated_at) * 1000)::bigint, src_partition, src_offset,"                      \
  " floor(extract(epoch FROM run_at) * 1000)::bigint, run_minute, scheduled_for_ms,"                      \
  " max_retries, retry_initial_ms, retry_multiplier, retry_max_ms, attempt, COALESCE(retry_of, ''),"         \
  " cron_expr, time_zone, pause_reason, pause_actor, floor(extract(epoch FROM paused_at) * 1000)::bigint,"      \
  " max_fires, fires_before, floor(extract(epoch FROM fires_from) * 1000)::bigint,"                       \
  " floor(extract(epoch FROM requested_end_at) * 1000)::bigint,"                                          \
  " floor(extract(epoch FROM requested_start_at) * 1000)::bigint, labels::text"

// Step 1 of an upsert: insert the jobs that do not exist yet. Existing ids are left to step 2.
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
    " CASE WHEN a.paused THEN now() END,"
    " a.max_fires, 0, " BELFRY_MS_TO_TIMESTAMPTZ("a.fires_from_ms") ", " BELFRY_MS_TO_TIMESTAMPTZ("a.requested_end_ms") ","
    " " BELFRY_MS_TO_TIMESTAMPTZ("a.requested_start_ms") ", a.labels::jsonb "
    "FROM belfry_upsert_stage AS a"
    BELFRY_FIRING_SHARD_STATE_JOIN
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
    " paused_at = CASE WHEN a.paused THEN CASE WHEN j.paused THEN j.paused_at ELSE now() END"
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
    " created_at = CASE WHEN a.replace_fresh THEN now() ELSE j.created_at END,"
    " updated_at = now() "
    "FROM belfry_upsert_stage AS a"
    BELFRY_FIRING_SHARD_STATE_JOIN
    "WHERE j.shard = a.shard AND j.id = a.id"
    " AND NOT (j.src_partition = a.src_partition AND j.src_offset >= a.src_offset)";

// Calendar jobs (migration 0006, docs/calendar-schedules.md). Step 0 of an upsert: number the
// zones of the staged slot-planned cron jobs that are new to cron_zones.
inline constexpr const char kRegisterStagedZonesName[] = "belfry_register_staged_zones";
inline constexpr const char kRegisterStagedZonesSql[] =
    "INSERT INTO cron_zones (name) "
    "SELECT DISTINCT a.time_zone FROM belfry_upsert_stage AS a"
    " WHERE a.cron_codes IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cron_zones AS z WHERE z.name = a.time_zone) "
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
    "SELECT a.shard, z.id::bigint * 2048 + c.code, a.id, a.hour_mask, a.dom_mask, a.month_mask, a.dow_mask,"
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
// shard) are cancelled either way. Every part reads the statement's one snapshot, so "gone" is
// "deleted by this statement, or not there before it"; one round trip, whatever the batch holds.
inline constexpr const char kDeleteJobsAndTheirRowsName[] = "belfry_delete_jobs_and_their_rows";
inline constexpr const char kDeleteJobsAndTheirRowsSql[] =
    "WITH a AS MATERIALIZED ("
    "  SELECT * FROM json_to_recordset($1::json) AS a(id text, shard smallint, src_partition int, src_offset bigint)),"
    " d AS (DELETE FROM jobs AS j USING a WHERE j.shard = a.shard AND j.id = a.id"
    "   AND NOT (j.src_partition = a.src_partition AND j.src_offset > a.src_offset) RETURNING j.id, j.shard),"
    " gone AS MATERIALIZED (SELECT id, shard FROM d UNION ALL"
    "   SELECT a.id, a.shard FROM a WHERE NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.shard = a.shard AND j.id = a.id)),"
    " r AS (DELETE FROM jobs AS j USING a WHERE j.shard = a.shard AND j.retry_of = a.id),"
    " b AS (DELETE FROM backfills AS b USING gone AS g WHERE b.job_id = g.id),"
    " e AS (DELETE FROM trigger_delivery_errors AS e USING gone AS g WHERE e.job_id = g.id),"
    " s AS (DELETE FROM cron_slots AS s USING gone AS g WHERE s.shard = g.shard AND s.job_id = g.id) "
    "SELECT id, shard FROM d";

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
// (late_limit < 0) to the next minute plus its step, which keeps the backfill's pace. The caller
// holds the shard's shard_state row (kLockShardStates). Returns the ids it inserted.
inline constexpr const char kInsertManualRowsName[] = "belfry_insert_manual_rows";
inline constexpr const char kInsertManualRowsSql[] =
    "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, owner, topic, key, details, priority,"
    " src_partition, src_offset, run_at, run_minute, scheduled_for_ms, retry_of) "
    "SELECT a.id, j.shard, j.interval_minutes, 0, j.owner, j.topic, j.key, j.details, j.priority,"
    " a.src_partition, a.src_offset, " BELFRY_MS_TO_TIMESTAMPTZ("a.scheduled_for_ms") ","
    " CASE WHEN a.late_limit < 0 THEN "
    BELFRY_ACROSS_CUTOVER("GREATEST(a.run_minute, " BELFRY_SHARD_NEXT_MINUTE " + a.step)",
                          BELFRY_STORED_SHARD_NEXT_MINUTE " + a.step")
    "  ELSE " BELFRY_RUN_MINUTE " END,"
    " a.scheduled_for_ms, j.id "
    "FROM json_to_recordset($1::json) AS a(id text, job_id text, shard smallint, run_minute bigint,"
    " late_limit bigint, step bigint, scheduled_for_ms bigint, src_partition int, src_offset bigint,"
    " placement_shard smallint, cutover_minute bigint) "
    "JOIN jobs AS j ON j.shard = a.shard AND j.id = a.job_id "
    BELFRY_FIRING_SHARD_STATE_JOIN
    "ON CONFLICT DO NOTHING "
    "RETURNING id";

#undef BELFRY_RUN_MINUTE
#undef BELFRY_WITHIN_LATE_LIMIT


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
    " paused_at = CASE WHEN NOT a.paused THEN NULL WHEN j.paused THEN j.paused_at ELSE now() END,"
    " updated_at = now() "
    "FROM json_to_recordset($1::json) AS a(id text, shard smallint, paused boolean, src_partition int,"
    " src_offset bigint, reason text, actor text, ts bigint) "
    "JOIN jobs AS o ON o.shard = a.shard AND o.id = a.id "
    "WHERE j.shard = a.shard AND j.id = a.id"
    " AND NOT (j.src_partition = a.src_partition AND j.src_offset >= a.src_offset)"
    " RETURNING j.id, j.shard, j.max_fires, o.paused AS was_paused, NOT a.paused AS resumed,"
    " floor(extract(epoch FROM o.paused_at) * 1000)::bigint AS paused_at_ms, a.ts) "
    "SELECT id, shard, paused_at_ms, ts FROM changed"
    " WHERE resumed AND was_paused AND max_fires IS NOT NULL AND paused_at_ms IS NOT NULL";

// $1 = a JSON array of {id, shard}: those jobs, as BELFRY_JOB_COLUMNS: the limited
// jobs a resume restarted, and the audit trail's snapshots (pg_job_change_log.h).
inline constexpr const char kReadJobsByKeysName[] = "belfry_read_jobs_by_keys";
#define BELFRY_READ_JOBS_BY_KEYS(columns)                                                           \
  "SELECT " columns " FROM jobs WHERE (shard, id) IN (SELECT a.shard, a.id FROM json_to_recordset($1::json)" \
  " AS a(id text, shard smallint))"

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
    "SELECT $1::smallint, z.id::bigint * 2048 + c.code, $2, $4::int, $5::int, $6::int, $7::int, $8::boolean "
    "FROM cron_zones AS z CROSS JOIN unnest($3::int[]) AS c(code) WHERE z.name = $9 "
    "ON CONFLICT DO NOTHING";

// ---- Reads (src/pg/pg_job_store.cc). ----------------------------------------------------------

inline constexpr const char kGetJobName[] = "belfry_get_job";
// $1 id, $2 ShardForId(id): reads one partition of jobs. PgJobStore falls back to kGetJobSql
// (by id alone: every partition's primary key, tens of ms at 5M jobs) when this finds nothing,
// so a row stored under another shard is still found.
inline constexpr const char kGetJobInShardName[] = "belfry_get_job_in_shard";
inline constexpr const char kGetJobInShardSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE shard = $2::smallint AND id = $1";
inline constexpr const char kGetJobSql[] = "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE id = $1";
inline constexpr const char kReadJobsByKeysSql[] = BELFRY_READ_JOBS_BY_KEYS(BELFRY_JOB_COLUMNS);
// The same, locked in (shard, id) order, the order the command path's writes lock jobs in.
inline constexpr const char kLockJobsByKeysName[] = "belfry_lock_jobs_by_keys";
inline constexpr const char kLockJobsByKeysSql[] =
    BELFRY_READ_JOBS_BY_KEYS(BELFRY_JOB_COLUMNS) " ORDER BY shard, id FOR UPDATE";
#undef BELFRY_READ_JOBS_BY_KEYS

// A job_stats row, decoded by JobStatsFromRow (pg_rows.h). Left defined: pg_execution_queries.h
// selects the same columns.
#define BELFRY_STATS_COLUMNS                                                                  \
  "job_id, last_status, last_scheduled_for_ms, last_attempt, last_error,"                     \
  " floor(extract(epoch FROM last_finished_at) * 1000)::bigint, consecutive_failures,"        \
  " total_succeeded, total_failed, last_success_scheduled_for_ms"

// A job's last undeliverable trigger (migration 0017), written only when the broker refuses one
// for good. $1 job id, $2 topic, $3 slot ms, $4 error text, $5 at ms.
inline constexpr const char kRecordDeliveryErrorName[] = "belfry_record_delivery_error";
inline constexpr const char kRecordDeliveryErrorSql[] =
    "INSERT INTO trigger_delivery_errors (job_id, topic, slot_ms, error, at_ms) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT (job_id) DO UPDATE SET topic = EXCLUDED.topic, slot_ms = EXCLUDED.slot_ms, "
    "error = EXCLUDED.error, at_ms = EXCLUDED.at_ms";
// The job view's lastDeliveryError. $1 job id. Columns: topic, slot_ms, error, at_ms.
inline constexpr const char kGetDeliveryErrorName[] = "belfry_get_delivery_error";
inline constexpr const char kGetDeliveryErrorSql[] =
    "SELECT topic, slot_ms, error, at_ms FROM trigger_delivery_errors WHERE job_id = $1";

// The admin API's job view: the job's columns (BELFRY_JOB_COLUMNS, 36 of them) and then its
// job_stats row (BELFRY_STATS_COLUMNS, all NULL before the first report), in one statement
// instead of two. Same parameters as kGetJobInShard / kGetJob.
#define BELFRY_JOB_VIEW_STATS " AS j LEFT JOIN LATERAL (SELECT " BELFRY_STATS_COLUMNS " FROM job_stats WHERE job_id = $1) AS s ON true"
inline constexpr int kJobViewStatsColumn = 36;
inline constexpr const char kGetJobViewInShardName[] = "belfry_get_job_view_in_shard";
inline constexpr const char kGetJobViewInShardSql[] =
    "SELECT j.*, s.* FROM (SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE shard = $2::smallint AND id = $1)"
    BELFRY_JOB_VIEW_STATS;
inline constexpr const char kGetJobViewName[] = "belfry_get_job_view";
inline constexpr const char kGetJobViewSql[] =
    "SELECT j.*, s.* FROM (SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE id = $1)" BELFRY_JOB_VIEW_STATS;
// The same read aimed at one partition by name (migration 0005 creates jobs_shard_000 ..
// jobs_shard_119): a plan over the parent locks and prunes all 121 partitions on every execution,
// a third of the rate of the direct read (pgbench, 5M jobs: 15k against 45k statements/s on 2
// clients). $1 id. PgJobStore prepares one per shard on first use.
inline constexpr int32_t kJobPartitions = 120;
inline std::string GetJobViewInPartitionName(int32_t shard) {
  return "belfry_get_job_view_" + std::to_string(shard);
}
inline std::string GetJobViewInPartitionSql(int32_t shard) {
  std::string table = std::to_string(shard);
  table.insert(0, 3 - std::min<size_t>(3, table.size()), '0');
  return "SELECT j.*, s.* FROM (SELECT " BELFRY_JOB_COLUMNS " FROM jobs_shard_" + table + " WHERE id = $1)"
         BELFRY_JOB_VIEW_STATS;
}
#undef BELFRY_JOB_VIEW_STATS

// Keyset pagination: $1 = after_id, $2 = limit, then the filters. One statement per filter shape,
// so each prepared plan can use its own index (pkey, (owner, id) or (topic, id)).
inline constexpr const char kListJobsName[] = "belfry_list_jobs";
inline constexpr const char kListJobsSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE id > $1 ORDER BY id LIMIT $2";
inline constexpr const char kListJobsByOwnerName[] = "belfry_list_jobs_by_owner";
inline constexpr const char kListJobsByOwnerSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE owner = $3 AND id > $1 ORDER BY id LIMIT $2";
inline constexpr const char kListJobsByTopicName[] = "belfry_list_jobs_by_topic";
inline constexpr const char kListJobsByTopicSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE topic = $3 AND id > $1 ORDER BY id LIMIT $2";
// By labels (migration 0013): $5 a canonical label object the job's labels must contain, and
// optionally $3 an owner and $4 a topic ('' for any). `labels <> '{}'` repeats the predicate of
// the partial GIN index, so that the planner may use it.
inline constexpr const char kListJobsByLabelsName[] = "belfry_list_jobs_by_labels";
inline constexpr const char kListJobsByLabelsSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE labels @> $5::jsonb AND labels <> '{}'::jsonb"
    " AND ($3 = '' OR owner = $3) AND ($4 = '' OR topic = $4) AND id > $1 ORDER BY id LIMIT $2";
inline constexpr const char kListJobsByOwnerTopicName[] = "belfry_list_jobs_by_owner_topic";
inline constexpr const char kListJobsByOwnerTopicSql[] =
    "SELECT " BELFRY_JOB_COLUMNS
    " FROM jobs WHERE owner = $3 AND topic = $4 AND id > $1 ORDER BY id LIMIT $2";

#undef BELFRY_JOB_COLUMNS

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

inline constexpr const char kCountJobsName[] = "belfry_count_jobs";
inline constexpr const char kCountJobsSql[] = "SELECT count(*) FROM jobs";

// ---- Load projection (PgJobStore::ReadLoadGroups, core/load_projection.h). -------------------
// Every unpaused job that may fire in a window, grouped by what decides when it fires, counted.
// $1 the window's first minute in epoch ms, $2 the end of its last minute (exclusive), $3 / $4
// the first and last minute (the job groups only: one-shots); the last parameter caps the rows
// (LoadGroupQuery::max_groups, plus one to see that it was exceeded). A start at or before $1, or an end at or after $2, cannot matter in
// the window and is read as NULL, so jobs that differ only there share a group. One full read of
// jobs (and of cron_slots), for operators: never on the trigger path.
#define BELFRY_LOAD_DATES                                                                            \
  "CASE WHEN j.start_at <= (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$1::bigint") ") THEN NULL"           \
  " ELSE floor(extract(epoch FROM j.start_at) * 1000)::bigint END, "                               \
  "CASE WHEN j.end_at >= (SELECT " BELFRY_MS_TO_TIMESTAMPTZ("$2::bigint") ") THEN NULL"             \
  " ELSE floor(extract(epoch FROM j.end_at) * 1000)::bigint END"
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
// [0]: no breakdown, [1]: by owner, [2]: by topic.
inline constexpr const char* kLoadJobGroupsSql[] = {
    BELFRY_LOAD_JOB_GROUPS("''"), BELFRY_LOAD_JOB_GROUPS("coalesce(j.owner, '')"),
    BELFRY_LOAD_JOB_GROUPS("j.topic")};
inline constexpr const char* kLoadCalendarGroupsSql[] = {
    BELFRY_LOAD_CALENDAR_GROUPS("''"), BELFRY_LOAD_CALENDAR_GROUPS("coalesce(j.owner, '')"),
    BELFRY_LOAD_CALENDAR_GROUPS("j.topic")};
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

// ---- Shard ledger (src/pg/pg_shard_ledger.cc). All leases use the database's clock. ----------

// How far the server's WAL goes (PgDueQueryStream::ReplayedPosition): a standby's replay
// position (0 before it replayed anything), a primary's insert position.
inline constexpr const char kReplayedPositionSql[] =
    "SELECT COALESCE((CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()"
    " ELSE pg_current_wal_insert_lsn() END - '0/0'::pg_lsn)::bigint, 0)";

// $1 shard, $2 node, $3 up_to_minute, $4 lease ms. One row: (claimed, fired_through, read
// fence (0 when not claimed), the layout record). No row at all means the shard has no shard_state row.
inline constexpr const char kClaimShardName[] = "belfry_claim_shard";
inline constexpr const char kClaimShardSql[] =
    // The read fence is the primary's WAL insert position before the claim's own change: fence
    // is a materialised CTE that the UPDATE's WHERE reads, so it is computed first.
    "WITH fence AS MATERIALIZED (SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS lsn), "
    "claimed AS ("
    "  UPDATE shard_state SET claim_node = $2, claim_until = now() + $4::bigint * interval '1 millisecond',"
    "    claim_through = $3::bigint, updated_at = now()"
    "  WHERE shard = $1::smallint AND (fired_through IS NULL OR fired_through < $3::bigint)"
    "    AND (claim_until IS NULL OR claim_until <= now() OR claim_node = $2)"
    "    AND (SELECT lsn FROM fence) IS NOT NULL"
    "  RETURNING fired_through"
    ") "
    "SELECT true, fired_through, (SELECT lsn FROM fence),"
    " (SELECT value FROM belfry_meta WHERE key = 'layout') FROM claimed "
    "UNION ALL "
    "SELECT false, fired_through, 0, (SELECT value FROM belfry_meta WHERE key = 'layout') FROM shard_state "
    "WHERE shard = $1::smallint AND NOT EXISTS (SELECT 1 FROM claimed)";

// $1 shard, $2 minute, $3 node, $4 lease ms, $5 release.
inline constexpr const char kMarkFiredName[] = "belfry_mark_fired";
inline constexpr const char kMarkFiredSql[] =
    "UPDATE shard_state SET"
    " fired_through = GREATEST(COALESCE(fired_through, $2::bigint), $2::bigint),"
    " claim_node = CASE WHEN $5::boolean THEN NULL ELSE claim_node END,"
    " claim_until = CASE WHEN $5::boolean THEN NULL"
    "   ELSE now() + $4::bigint * interval '1 millisecond' END,"
    " updated_at = now() "
    "WHERE shard = $1::smallint AND claim_node = $3";

// $1 shard, $2 node.
inline constexpr const char kReleaseShardName[] = "belfry_release_shard";
inline constexpr const char kReleaseShardSql[] =
    "UPDATE shard_state SET claim_node = NULL, claim_until = NULL, updated_at = now() "
    "WHERE shard = $1::smallint AND claim_node = $2";

// $1 shard, $2 minute, $3 first and $4 last minute of the debt to add (none when $4 < $3),
// $5 node. The end of an on-time firing: watermark, new debt and release in one statement.
inline constexpr const char kAdvanceShardName[] = "belfry_advance_shard";
inline constexpr const char kAdvanceShardSql[] =
    "UPDATE shard_state SET"
    " fired_through = GREATEST(COALESCE(fired_through, $2::bigint), $2::bigint),"
    " debt = CASE WHEN $4::bigint >= $3::bigint"
    "   THEN debt + int8multirange(int8range($3::bigint, $4::bigint, '[]')) ELSE debt END,"
    " claim_node = NULL, claim_until = NULL, updated_at = now() "
    "WHERE shard = $1::smallint AND claim_node = $5";

// $1 shard, $2 node, $3 lease ms. One row iff claimed: the lowest range owed (first, last
// minute), the minutes owed in all, the read fence and the layout record. The ranges of a multirange are kept sorted and merged.
inline constexpr const char kClaimDebtName[] = "belfry_claim_debt";
inline constexpr const char kClaimDebtSql[] =
    // The read fence as in kClaimShardSql.
    "WITH fence AS MATERIALIZED (SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS lsn) "
    "UPDATE shard_state SET debt_node = $2,"
    " debt_until = now() + $3::bigint * interval '1 millisecond', updated_at = now() "
    "WHERE shard = $1::smallint AND NOT isempty(debt)"
    " AND (debt_until IS NULL OR debt_until <= now() OR debt_node = $2)"
    " AND (SELECT lsn FROM fence) IS NOT NULL "
    "RETURNING lower(debt),"
    " (SELECT upper(r) - 1 FROM unnest(debt) AS r ORDER BY lower(r) LIMIT 1),"
    " (SELECT sum(upper(r) - lower(r)) FROM unnest(debt) AS r)::bigint,"
    " (SELECT lsn FROM fence), (SELECT value FROM belfry_meta WHERE key = 'layout')";

// $1 shard, $2 node, $3 lease ms.
inline constexpr const char kRenewDebtName[] = "belfry_renew_debt";
inline constexpr const char kRenewDebtSql[] =
    "UPDATE shard_state SET debt_until = now() + $3::bigint * interval '1 millisecond' "
    "WHERE shard = $1::smallint AND debt_node = $2";

// $1 shard, $2 first and $3 last minute paid, $4 node.
inline constexpr const char kSettleDebtName[] = "belfry_settle_debt";
inline constexpr const char kSettleDebtSql[] =
    "UPDATE shard_state SET debt = debt - int8multirange(int8range($2::bigint, $3::bigint, '[]')),"
    " debt_node = NULL, debt_until = NULL, updated_at = now() "
    "WHERE shard = $1::smallint AND debt_node = $4";

// $1 shard, $2 node.
inline constexpr const char kReleaseDebtName[] = "belfry_release_debt";
inline constexpr const char kReleaseDebtSql[] =
    "UPDATE shard_state SET debt_node = NULL, debt_until = NULL, updated_at = now() "
    "WHERE shard = $1::smallint AND debt_node = $2";

// Columns: shard, fired_through, claim node, claim until (ms), claim live, debt minutes owed,
// oldest minute owed, debt node, debt lease live.
inline constexpr const char kLoadShardStatesName[] = "belfry_load_shard_states";
inline constexpr const char kLoadShardStatesSql[] =
    "SELECT shard, fired_through, COALESCE(claim_node, ''),"
    " floor(extract(epoch FROM claim_until) * 1000)::bigint, COALESCE(claim_until > now(), false),"
    " (SELECT COALESCE(sum(upper(r) - lower(r)), 0) FROM unnest(debt) AS r)::bigint, lower(debt),"
    " COALESCE(debt_node, ''), COALESCE(debt_until > now(), false) "
    "FROM shard_state ORDER BY shard";

// ---- Migrations (src/pg/migrator.cc). ---------------------------------------------------------

// Session advisory lock key held while migrating: ASCII "belfrymg".
inline constexpr long long kMigrationLockKey = 0x62656c6672796d67LL;

inline constexpr const char kMigrationLockName[] = "belfry_migration_lock";
inline constexpr const char kMigrationLockSql[] = "SELECT pg_advisory_lock($1::bigint)";
inline constexpr const char kMigrationUnlockName[] = "belfry_migration_unlock";
inline constexpr const char kMigrationUnlockSql[] = "SELECT pg_advisory_unlock($1::bigint)";

inline constexpr const char kCreateSchemaMigrationsSql[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())";

inline constexpr const char kSchemaMigrationsExistsName[] = "belfry_schema_migrations_exists";
inline constexpr const char kSchemaMigrationsExistsSql[] =
    "SELECT to_regclass('schema_migrations') IS NOT NULL";

inline constexpr const char kAppliedMigrationsName[] = "belfry_applied_migrations";
inline constexpr const char kAppliedMigrationsSql[] =
    "SELECT version FROM schema_migrations ORDER BY version";

inline constexpr const char kRecordMigrationName[] = "belfry_record_migration";
inline constexpr const char kRecordMigrationSql[] =
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())";

// $1 shard_count as text.
inline constexpr const char kInsertShardCountName[] = "belfry_insert_shard_count";
inline constexpr const char kInsertShardCountSql[] =
    "INSERT INTO belfry_meta (key, value) VALUES ('shard_count', $1) ON CONFLICT (key) DO NOTHING";

// The layout record of a new database: no reshard under way (docs/resharding.md). $1 shard_count.
inline constexpr const char kInsertLayoutName[] = "belfry_insert_layout";
inline constexpr const char kInsertLayoutSql[] =
    "INSERT INTO belfry_meta (key, value) VALUES ('layout', json_build_object('from', $1::int)::text) "
    "ON CONFLICT (key) DO NOTHING";

// The layout record, read by the job store in each transaction that names a stored shard; FOR
// SHARE in writes, so a reshard's move of a shard (which holds it FOR UPDATE) and a write wait
// for each other (docs/resharding.md).
inline constexpr const char kReadLayoutName[] = "belfry_read_layout";
inline constexpr const char kReadLayoutSql[] = "SELECT value FROM belfry_meta WHERE key = 'layout'";
inline constexpr const char kShareLayoutName[] = "belfry_share_layout";
inline constexpr const char kShareLayoutSql[] = "SELECT value FROM belfry_meta WHERE key = 'layout' FOR SHARE";

inline constexpr const char kGetShardCountName[] = "belfry_get_shard_count";
inline constexpr const char kGetShardCountSql[] = "SELECT value FROM belfry_meta WHERE key = 'shard_count'";

// $1 shard_count.
inline constexpr const char kInsertShardStatesName[] = "belfry_insert_shard_states";
inline constexpr const char kInsertShardStatesSql[] =
    "INSERT INTO shard_state (shard) SELECT s FROM generate_series(0, $1::int - 1) AS s "
    "ON CONFLICT (shard) DO NOTHING";

}  // namespace belfry::pg_queries

#undef BELFRY_MS_TO_TIMESTAMPTZ
