// The SQL that the job statements share: timestamps as epoch milliseconds, a job's columns, a
// one-shot's placement by its shard's progress, and reading jobs by key. Every statement is a named
// constant with $n parameters, in a header per role (pg_*_queries.h); values are always bound as
// parameters, never spliced into the text. The schema itself lives only in migrations/.
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
// The milliseconds are added to the UTC wall time (timestamp + interval), not to the timestamptz:
// every function here is IMMUTABLE (timestamptz + interval is STABLE), which Citus requires of
// functions given a column in an UPDATE (docs/scale-out.md). The session's TimeZone plays no part.
#define BELFRY_MS_TO_TIMESTAMPTZ(ms) \
  "timezone('UTC', timezone('UTC', to_timestamp((" ms ") / 1000)) + ((" ms ") % 1000) * interval '1 millisecond')"
// The epoch milliseconds of timestamptz `t` (extract returns numeric, so this is exact).
// Through the UTC wall time: extract from a timestamp is IMMUTABLE, from a timestamptz STABLE, and
// Citus allows no STABLE function in a modification's RETURNING (docs/scale-out.md).
#define BELFRY_TS_TO_MS(t) "floor(extract(epoch FROM timezone('UTC', " t ")) * 1000)::bigint"

#define BELFRY_STRINGIFY_(x) #x
#define BELFRY_STRINGIFY(x) BELFRY_STRINGIFY_(x)

namespace belfry::pg_queries {

// ---- Rows placed by a shard's progress: one-shot commands, manual fires, retries. -------------
// Such a row goes to its planned minute, or, when the shard that fires that minute has fired it
// or a live claim may have queried it, to that shard's next minute. The writer first locks the
// placing shard_state rows (PlacingShardRows, core/shard_layout.h) FOR SHARE until its commit,
// and reads each one's next minute in the same statement: no firing can claim those shards
// between that read and the commit, so a firing either is visible to the placement (fired_through,
// or a live claim's claim_through) or sees the committed row. The rows then carry the minutes as
// values (placement_next_minute, stored_next_minute): held rows cannot move, so that is what a
// join inside the insert would read. Citus refuses that join (issue 36): the shard_state row is
// found by a value of the row (its placement shard), not by the distribution column it is joined
// on (docs/scale-out.md). LockPlacingShardStates (pg_placing_shard_states.h) sends them.

// The first minute a new row of shard_state row `s` can still be fired in: after what it has
// fired and after what a live claim covers (that firing's query may already have run). NULL when
// neither is set. `now`: the transaction's now(), as a parameter (PgJobStore::txn_now_), not the
// statement's: on Citus a router query's now() is the worker's, in a transaction of its own.
#define BELFRY_NEXT_MINUTE_AT(s, now) \
  "GREATEST(" s ".fired_through + 1, CASE WHEN " s ".claim_until > " now " THEN " s ".claim_through + 1 END)"

// $1 = smallint[] of shards, sorted (a fixed lock order); $2 = the transaction's now(). Returns
// each row's shard and next minute.
#define BELFRY_LOCK_PLACING_SHARD_STATES(where) \
  "SELECT shard, " BELFRY_NEXT_MINUTE_AT("ss", "$2::timestamptz") " FROM shard_state AS ss WHERE " where
inline constexpr const char kLockPlacingShardStatesName[] = "belfry_lock_placing_shard_states";
inline constexpr const char kLockPlacingShardStatesSql[] =
    BELFRY_LOCK_PLACING_SHARD_STATES("shard = ANY ($1::smallint[]) ORDER BY shard FOR SHARE");
// Citus (PgSession::citus): the same for one shard, $1. Citus locks rows only in a statement that
// reaches one shard, so LockPlacingShardStates sends this once per shard, in shard order.
inline constexpr const char kLockPlacingShardStateName[] = "belfry_lock_placing_shard_state";
inline constexpr const char kLockPlacingShardStateSql[] =
    BELFRY_LOCK_PLACING_SHARD_STATES("shard = $1::smallint FOR SHARE");
#undef BELFRY_LOCK_PLACING_SHARD_STATES

// A minute `x` placed by the progress of the row that fires the planned minute (the placement
// row, placement_next_minute). During a cut-over (a.cutover_minute, NULL otherwise), when that
// was the old layout's row and `x` reached the cut-over, the stored shard's row fires it: `x`
// moves on by that row's progress too (`y`, from stored_next_minute), so that a row is never
// stored in a minute its firing shard has already fired (docs/resharding.md).
#define BELFRY_ACROSS_CUTOVER(x, y) \
  "CASE WHEN a.cutover_minute IS NOT NULL AND " x " >= a.cutover_minute THEN GREATEST(" x ", " y ") ELSE " x " END"

// A one-shot's run_minute: the action's, unless its shard has fired that minute, or is firing it,
// by the time the command is applied, and the shard's next minute is within the action's
// late_limit (see OneShotPlacement); NULL for interval jobs. (Like a retry's GREATEST(run_minute,
// next minute), but only a next minute within late_limit; GREATEST ignores the NULL of one that
// is not.) Reads a.run_minute, a.late_limit, a.placement_next_minute, a.stored_next_minute and
// a.cutover_minute.
#define BELFRY_WITHIN_LATE_LIMIT(next) "CASE WHEN " next " <= a.late_limit THEN " next " END"
#define BELFRY_RUN_MINUTE                                                                                  \
  "CASE WHEN a.run_minute IS NULL THEN NULL ELSE "                                                         \
  BELFRY_ACROSS_CUTOVER("GREATEST(a.run_minute, " BELFRY_WITHIN_LATE_LIMIT("a.placement_next_minute") ")", \
                        BELFRY_WITHIN_LATE_LIMIT("a.stored_next_minute"))                                  \
  " END"

// Column order is decoded by PgJobStore's row reader; keep the two in step.
#define BELFRY_JOB_COLUMNS                                                                                 \
  "id, owner, interval_minutes, offset_minutes, shard, topic, key, details,"                               \
  " " BELFRY_TS_TO_MS("start_at") ", " BELFRY_TS_TO_MS("end_at") "," \
  " priority, paused, " BELFRY_TS_TO_MS("created_at") ","                               \
  " " BELFRY_TS_TO_MS("updated_at") ", src_partition, src_offset,"                      \
  " " BELFRY_TS_TO_MS("run_at") ", run_minute, scheduled_for_ms,"                      \
  " max_retries, retry_initial_ms, retry_multiplier, retry_max_ms, attempt, COALESCE(retry_of, ''),"         \
  " cron_expr, time_zone, pause_reason, pause_actor, " BELFRY_TS_TO_MS("paused_at") ","      \
  " max_fires, fires_before, " BELFRY_TS_TO_MS("fires_from") ","                       \
  " " BELFRY_TS_TO_MS("requested_end_at") ","                                          \
  " " BELFRY_TS_TO_MS("requested_start_at") ", labels::text"

// Step 1 of an upsert: insert the jobs that do not exist yet. Existing ids are left to step 2.

// $1 = a JSON array of {id, shard}: those jobs, as BELFRY_JOB_COLUMNS: the limited
// jobs a resume restarted, and the audit trail's snapshots (pg_job_change_log.h).
inline constexpr const char kReadJobsByKeysName[] = "belfry_read_jobs_by_keys";
#define BELFRY_READ_JOBS_BY_KEYS(columns)                                                           \
  "SELECT " columns " FROM jobs WHERE (shard, id) IN (SELECT a.shard, a.id FROM json_to_recordset($1::json)" \
  " AS a(id text, shard smallint))"

// ---- Jobs by key: every role reads them. ---------------------------------------------------

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

// Citus (JobChangeLog): the same, one belfry shard at a time, which Citus routes to one shard.
// $1 shard, $2 text[] of ids.
inline constexpr const char kReadJobsInShardName[] = "belfry_read_jobs_in_shard";
inline constexpr const char kReadJobsInShardSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE shard = $1::smallint AND id = ANY ($2::text[])";
inline constexpr const char kLockJobsInShardName[] = "belfry_lock_jobs_in_shard";
inline constexpr const char kLockJobsInShardSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE shard = $1::smallint AND id = ANY ($2::text[]) ORDER BY id FOR UPDATE";

// A job_stats row, decoded by JobStatsFromRow (pg_rows.h). Left defined: pg_execution_queries.h
// selects the same columns.
#define BELFRY_STATS_COLUMNS                                                                  \
  "job_id, last_status, last_scheduled_for_ms, last_attempt, last_error,"                     \
  " " BELFRY_TS_TO_MS("last_finished_at") ", consecutive_failures,"        \
  " total_succeeded, total_failed, last_success_scheduled_for_ms"

}  // namespace belfry::pg_queries
