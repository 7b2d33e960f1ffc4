// The SQL of bulk operations (docs/bulk-operations.md, migration 0014): recording them, walking
// their jobs, and reading their state. The job changes themselves reuse the command path's
// statements (pg_command_queries.h: kSetPausedSql, kDeleteJobsAndTheirRowsSql;
// pg_job_sql.h: kLockPlacingShardStatesSql; pg_manual_fire_queries.h: kInsertManualRowsSql).
#pragma once

#include "pg/pg_job_sql.h"  // BELFRY_TS_TO_MS

namespace belfry::pg_queries {

// The columns BulkOpStateFromRow reads, in order.
#define BELFRY_BULK_OP_COLUMNS                                                                            \
  "id, op, owner, labels::text, reason, actor, dry_run, src_partition, src_offset, command_ts,"          \
  " " BELFRY_TS_TO_MS("accepted_at") ", next_shard, after_id, matched, changed, steps," \
  " " BELFRY_TS_TO_MS("finished_at") ", " BELFRY_TS_TO_MS("published_at")

// $1 id, $2 op, $3 owner (NULL any), $4 labels (NULL any), $5 reason, $6 actor, $7 dry_run,
// $8 src_partition, $9 src_offset, $10 command_ts. Returns the id iff it recorded the op.
inline constexpr const char kAcceptBulkOpName[] = "belfry_accept_bulk_op";
inline constexpr const char kAcceptBulkOpSql[] =
    "INSERT INTO bulk_ops (id, op, owner, labels, reason, actor, dry_run, src_partition, src_offset, command_ts) "
    "VALUES ($1, $2, $3, $4::jsonb, NULLIF($5, ''), NULLIF($6, ''), $7, $8, $9, $10) "
    "ON CONFLICT (id) DO NOTHING RETURNING id";

// The op already stored under an id: whose command recorded it.
inline constexpr const char kBulkOpSourceName[] = "belfry_bulk_op_source";
inline constexpr const char kBulkOpSourceSql[] = "SELECT src_partition, src_offset FROM bulk_ops WHERE id = $1";

// The oldest unfinished operation that no other transaction holds: the step holds it to its end.
inline constexpr const char kClaimBulkOpName[] = "belfry_claim_bulk_op";
inline constexpr const char kClaimBulkOpSql[] =
    "SELECT " BELFRY_BULK_OP_COLUMNS " FROM bulk_ops WHERE finished_at IS NULL "
    "ORDER BY accepted_at, id LIMIT 1 FOR UPDATE SKIP LOCKED";

// The selector's terms: an owner (NULL: any) and labels (NULL: any). Derived rows (retries,
// manual triggers, backfills: retry_of set) follow their job and are never selected. The labels
// term repeats the partial GIN index's predicate (migration 0013).
#define BELFRY_BULK_SELECTOR_SQL(owner, labels)                                  \
  " AND retry_of IS NULL AND (" owner "::text IS NULL OR owner = " owner "::text)" \
  " AND (" labels "::jsonb IS NULL OR (labels @> " labels "::jsonb AND labels <> '{}'::jsonb))"

// A page of the walk: up to $5 matching jobs of shard $1 with ids after $2, in id order, locked
// against the command path until the step commits. `shard = $1` reaches one shard, so Citus runs
// its FOR UPDATE as it is (a router query).
inline constexpr const char kBulkPageName[] = "belfry_bulk_page";
inline constexpr const char kBulkPageSql[] =
    "SELECT id, paused FROM jobs WHERE shard = $1::smallint AND id > $2::text" BELFRY_BULK_SELECTOR_SQL("$3", "$4")
    " ORDER BY id LIMIT $5::int FOR UPDATE";

// A dry run's step: how many jobs of shard $1 match ($2 owner, $3 labels).
inline constexpr const char kBulkCountName[] = "belfry_bulk_count";
inline constexpr const char kBulkCountSql[] =
    "SELECT count(*) FROM jobs WHERE shard = $1::smallint" BELFRY_BULK_SELECTOR_SQL("$2", "$3");

#undef BELFRY_BULK_SELECTOR_SQL

// $1 id, $2 next_shard, $3 after_id, $4 matched delta, $5 changed delta, $6 finished.
inline constexpr const char kRecordBulkStepName[] = "belfry_record_bulk_step";
inline constexpr const char kRecordBulkStepSql[] =
    "UPDATE bulk_ops SET next_shard = $2, after_id = $3, matched = matched + $4, changed = changed + $5,"
    " steps = steps + 1, finished_at = CASE WHEN $6 THEN now() END "
    "WHERE id = $1 RETURNING " BELFRY_BULK_OP_COLUMNS;

inline constexpr const char kUnpublishedBulkOpsName[] = "belfry_unpublished_bulk_ops";
inline constexpr const char kUnpublishedBulkOpsSql[] =
    "SELECT " BELFRY_BULK_OP_COLUMNS " FROM bulk_ops WHERE finished_at IS NOT NULL AND published_at IS NULL "
    "ORDER BY finished_at, id LIMIT $1";

// $1 id, $2 when (ms).
inline constexpr const char kMarkBulkOpPublishedName[] = "belfry_mark_bulk_op_published";
inline constexpr const char kMarkBulkOpPublishedSql[] =
    "UPDATE bulk_ops SET published_at = to_timestamp($2::bigint / 1000.0) WHERE id = $1 AND published_at IS NULL";

inline constexpr const char kGetBulkOpName[] = "belfry_get_bulk_op";
inline constexpr const char kGetBulkOpSql[] = "SELECT " BELFRY_BULK_OP_COLUMNS " FROM bulk_ops WHERE id = $1";

inline constexpr const char kListBulkOpsName[] = "belfry_list_bulk_ops";
inline constexpr const char kListBulkOpsSql[] =
    "SELECT " BELFRY_BULK_OP_COLUMNS " FROM bulk_ops ORDER BY accepted_at DESC, id LIMIT $1";

#undef BELFRY_BULK_OP_COLUMNS

}  // namespace belfry::pg_queries
