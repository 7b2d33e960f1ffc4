// The shard ledger (src/pg/pg_shard_ledger.cc): claims, watermarks and catch-up debt.
#pragma once

#include <cstdint>
#include <string>

#include "pg/pg_job_sql.h"

namespace belfry::pg_queries {

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

// The claims' lock timeout (PgShardLedger's claim_lock_timeout_ms), first in their transaction.
// On Citus the claim's row lock is taken on the worker that holds the row: SET LOCAL reaches the
// worker only with citus.propagate_set_commands = 'local', itself set for this transaction.
inline std::string ClaimLockTimeoutSql(int64_t timeout_ms, bool citus) {
  std::string sql = citus ? "SET LOCAL citus.propagate_set_commands = 'local'; " : "";
  return sql + "SET LOCAL lock_timeout = '" + std::to_string(timeout_ms) + "ms'";
}

// $1 shard, $2 minute, $3 node, $4 lease ms, $5 release.
inline constexpr const char kMarkFiredName[] = "belfry_mark_fired";
inline constexpr const char kMarkFiredSql[] =
    "UPDATE shard_state SET"
    " fired_through = GREATEST(COALESCE(fired_through, $2::bigint), $2::bigint),"
    " claim_node = CASE WHEN $5::boolean THEN NULL ELSE claim_node END,"
    // now() stays outside the CASE: Citus refuses a non-IMMUTABLE function inside CASE or
    // COALESCE in a modification (it evaluates them on the coordinator). NULL + x is NULL.
    " claim_until = now() + $4::bigint * interval '1 millisecond'"
    "   + CASE WHEN $5::boolean THEN NULL ELSE interval '0' END,"
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
    // LEAST keeps the unused range valid when there is no new debt ($4 < $3): Citus evaluates
    // int8range(constants) on the coordinator before the CASE chooses.
    " debt = CASE WHEN $4::bigint >= $3::bigint"
    "   THEN debt + int8multirange(int8range(LEAST($3::bigint, $4::bigint), $4::bigint, '[]')) ELSE debt END,"
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
    " " BELFRY_TS_TO_MS("claim_until") ", COALESCE(claim_until > now(), false),"
    " (SELECT COALESCE(sum(upper(r) - lower(r)), 0) FROM unnest(debt) AS r)::bigint, lower(debt),"
    " COALESCE(debt_node, ''), COALESCE(debt_until > now(), false) "
    "FROM shard_state ORDER BY shard";

}  // namespace belfry::pg_queries
