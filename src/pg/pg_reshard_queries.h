// SQL of `belfry reshard` (PgReshard; docs/resharding.md). Kept apart from the other statements: none of
// it runs on the trigger or command paths.
#pragma once

namespace belfry::pg_queries {

// A reshard step takes the layout lock exclusive (kLayoutLockKey, pg_schema_queries.h: command
// transactions hold it shared), then reads the record FOR UPDATE, which also orders two steps.
inline constexpr const char kLockLayoutExclusiveSql[] = "SELECT pg_advisory_xact_lock($1::bigint)";
inline constexpr const char kLockLayoutSql[] = "SELECT value FROM belfry_meta WHERE key = 'layout' FOR UPDATE";
// $1 the record.
inline constexpr const char kWriteLayoutSql[] = "UPDATE belfry_meta SET value = $1 WHERE key = 'layout'";
// $1 the stored shard count.
inline constexpr const char kWriteShardCountSql[] = "UPDATE belfry_meta SET value = $1 WHERE key = 'shard_count'";

// Rows in jobs' DEFAULT partition: none may exist before partitions for new shards are created.
inline constexpr const char kCountDefaultPartitionSql[] = "SELECT count(*) FROM jobs_shard_default";

// Whether jobs has a partition for $1.
inline constexpr const char kHasShardPartitionSql[] =
    "SELECT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
    "WHERE i.inhparent = 'jobs'::regclass AND c.relname = $1)";

// The ids stored in shard $1 (the move reads them, computes their new shard, and moves those
// that change).
inline constexpr const char kIdsInShardSql[] = "SELECT id FROM jobs WHERE shard = $1::smallint";

// Every column of jobs but id, shard and the generated phase, in one list for the move's DELETE
// and INSERT. A migration that adds a column to jobs adds it here
// (PgReshardTest.TheMoveCopiesEveryColumn checks this list against the catalog).
#define BELFRY_RESHARD_MOVED_JOB_COLUMNS                                                                          \
  "interval_minutes, offset_minutes, owner, topic, key, details, start_at, end_at, priority, paused, "           \
  "src_partition, src_offset, created_at, updated_at, run_at, run_minute, scheduled_for_ms, max_retries, "       \
  "retry_initial_ms, retry_multiplier, retry_max_ms, attempt, retry_of, cron_expr, time_zone, offset_pinned, " \
  "pause_reason, pause_actor, paused_at, max_fires, fires_before, fires_from, requested_end_at, "               \
  "requested_start_at, labels"
#define BELFRY_RESHARD_MOVED_SLOT_COLUMNS "key, job_id, hour_mask, dom_mask, month_mask, dow_mask, day_or"

// $1 new shard, $2 old shard, $3 ids (text[]). The move of a row to another shard: a DELETE ...
// RETURNING and an INSERT of what it returned under the new shard, in one statement. Not an
// UPDATE of shard: Citus refuses to change a distribution column ("modifying the partition value
// of rows is not allowed"); PostgreSQL runs a cross-partition UPDATE as a delete and an insert
// anyway. Returns the rows inserted.
inline constexpr const char kMoveJobsSql[] =
    "WITH moved AS (DELETE FROM jobs WHERE shard = $2::smallint AND id = ANY ($3::text[]) RETURNING id, "
    BELFRY_RESHARD_MOVED_JOB_COLUMNS ") INSERT INTO jobs (id, shard, " BELFRY_RESHARD_MOVED_JOB_COLUMNS
    ") SELECT id, $1::smallint, " BELFRY_RESHARD_MOVED_JOB_COLUMNS " FROM moved";
inline constexpr const char kMoveCronSlotsSql[] =
    "WITH moved AS (DELETE FROM cron_slots WHERE shard = $2::smallint AND job_id = ANY ($3::text[]) RETURNING "
    BELFRY_RESHARD_MOVED_SLOT_COLUMNS ") INSERT INTO cron_slots (shard, " BELFRY_RESHARD_MOVED_SLOT_COLUMNS
    ") SELECT $1::smallint, " BELFRY_RESHARD_MOVED_SLOT_COLUMNS " FROM moved";

// $1 first new shard, $2 last, $3 the watermark (cut-over minute - 1).
inline constexpr const char kInsertNewShardStatesSql[] =
    "INSERT INTO shard_state (shard, fired_through) SELECT s, $3::bigint FROM generate_series($1::int, $2::int) AS s "
    "ON CONFLICT (shard) DO NOTHING";

// $1 the cut-over minute, $2 the old layout's shard count: the shards that still hold a minute
// before the cut-over (an old shard not fired through $1 - 1, or any shard owing one in its
// debt). None: no firing will ever use the old layout again, and a next reshard may begin.
inline constexpr const char kShardsBeforeCutoverSql[] =
    "SELECT shard FROM shard_state WHERE (shard < $2::int AND (fired_through IS NULL OR fired_through < $1::bigint - 1))"
    " OR debt && int8multirange(int8range(NULL, $1::bigint)) ORDER BY shard LIMIT 10";

}  // namespace belfry::pg_queries
