// SQL of `belfry reshard` (PgReshard; docs/resharding.md). Kept apart from the other statements: none of
// it runs on the trigger or command paths.
#pragma once

namespace belfry::pg_queries {

// The layout record, locked against command transactions (which read it FOR SHARE) while a
// reshard step changes it.
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

// $1 new shard, $2 old shard, $3 ids (text[]). A cross-partition update: PostgreSQL deletes each
// row from the old partition and inserts it into the new one.
inline constexpr const char kMoveJobsSql[] =
    "UPDATE jobs SET shard = $1::smallint WHERE shard = $2::smallint AND id = ANY ($3::text[])";
inline constexpr const char kMoveCronSlotsSql[] =
    "UPDATE cron_slots SET shard = $1::smallint WHERE shard = $2::smallint AND job_id = ANY ($3::text[])";

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
