// Migrations (src/pg/migrator.cc) and the records they write: the shard count and the layout,
// which the job store reads in every transaction that names a stored shard.
#pragma once

#include <cstdint>

namespace belfry::pg_queries {

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

// The layout record, read by the job store in each transaction that names a stored shard
// (docs/resharding.md).
inline constexpr const char kReadLayoutName[] = "belfry_read_layout";
inline constexpr const char kReadLayoutSql[] = "SELECT value FROM belfry_meta WHERE key = 'layout'";

// The layout lock, ASCII "belfryly": a write takes it shared for its transaction
// (kLockLayoutSharedSql) before it reads the record, and a reshard step takes it exclusive
// (kLockLayoutExclusiveSql, pg_reshard_queries.h) before it changes the record, so a reshard's
// move of a shard and a write wait for each other. The write's read of the record is a statement
// of its own after the lock, so that it sees what a reshard step committed while it waited.
// An advisory lock, not a row lock on the record: on Citus belfry_meta is a reference table, whose
// row lock needs every node, so no command applied while any worker was down (docs/scale-out.md).
// An advisory lock is the coordinator's alone, where every belfry session's transaction runs.
inline constexpr long long kLayoutLockKey = 0x62656c6672796c79LL;
inline constexpr const char kLockLayoutSharedName[] = "belfry_lock_layout_shared";
inline constexpr const char kLockLayoutSharedSql[] = "SELECT pg_advisory_xact_lock_shared($1::bigint)";

// The layout record (NULL without one: the config's layout is the rule) and the transaction's
// now(), as text: a write reads it after kLockLayoutSharedSql and passes the now() to the
// statements that would call now() inside a CASE, which Citus refuses in a modification
// (PgJobStore::txn_now_); the retries place by it (LockPlacingShardStates, pg_job_writes.h: Citus
// would evaluate a now() of that statement on the worker). One row always. On Citus belfry_meta is
// a reference table with a placement on the coordinator, and the subquery's form keeps now() out
// of the routed statement, so both run there, in the transaction.
inline constexpr const char kReadLayoutAndNowName[] = "belfry_read_layout_and_now";
inline constexpr const char kReadLayoutAndNowSql[] =
    "SELECT (SELECT value FROM belfry_meta WHERE key = 'layout'), now()::text";

// Whether the database has Citus (its extension creates pg_dist_partition): PgSession reads it at
// every connect.
inline constexpr const char kCitusInstalledSql[] = "SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL";

// Whether the database orders text byte-wise (the libc "C" or "POSIX" collation), so that the ids
// starting with a prefix are one range of the id index (GET /v1/jobs?id_prefix=, PgJobStore).
inline constexpr const char kByteOrderedTextSql[] =
    "SELECT datlocprovider = 'c' AND datcollate IN ('C', 'POSIX') FROM pg_database WHERE datname = current_database()";

// On Citus: the host and port of the worker that holds belfry shard $1 (its shard group: jobs,
// shard_state and the co-located tables), for the tick query sent straight there
// (PgWorkerTickRouter). No row when the table is not distributed.
inline constexpr const char kCitusWorkerOfShardSql[] =
    "SELECT n.nodename, n.nodeport::text FROM pg_dist_placement pl JOIN pg_dist_node n ON n.groupid = pl.groupid "
    "WHERE pl.shardid = get_shard_id_for_distribution_column('shard_state', $1::smallint) "
    "AND n.noderole = 'primary' AND n.isactive LIMIT 1";

inline constexpr const char kGetShardCountName[] = "belfry_get_shard_count";
inline constexpr const char kGetShardCountSql[] = "SELECT value FROM belfry_meta WHERE key = 'shard_count'";

// $1 shard_count.
inline constexpr const char kInsertShardStatesName[] = "belfry_insert_shard_states";
inline constexpr const char kInsertShardStatesSql[] =
    "INSERT INTO shard_state (shard) SELECT s FROM generate_series(0, $1::int - 1) AS s "
    "ON CONFLICT (shard) DO NOTHING";

// On a Citus cluster, distributes the tables once (migration 0019, docs/scale-out.md); on a plain
// PostgreSQL it does nothing. Run by every `belfry migrate` after the migrations, so a database
// migrated as plain PostgreSQL moves to Citus once the extension and the workers are there. The
// function is absent while a migrations directory stops before 0019 (older schemas, tests).
inline constexpr const char kCitusDistributeExistsName[] = "belfry_citus_distribute_exists";
inline constexpr const char kCitusDistributeExistsSql[] =
    "SELECT to_regprocedure('belfry_citus_distribute(integer)') IS NOT NULL";
inline constexpr const char kCitusDistributeSql[] = "SELECT belfry_citus_distribute()";

}  // namespace belfry::pg_queries
