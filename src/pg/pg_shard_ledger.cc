#include "pg/pg_shard_ledger.h"

#include <pqxx/except>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>
#include <utility>

#include "core/shard_layout.h"
#include "pg/pg_schema_queries.h"
#include "pg/pg_shard_ledger_queries.h"

namespace belfry {
namespace {

// The layout record a claim read (migration 0016 writes it; docs/resharding.md).
Status LayoutOfField(const pqxx::field& field, ShardLayout* out) {
  if (field.is_null()) return Status::FailedPrecondition("the database has no shard layout record: run `belfry migrate`");
  StatusOr<ShardLayout> layout = ParseShardLayout(field.as<std::string>());
  if (!layout.ok()) return layout.status();
  *out = *layout;
  return Status::Ok();
}

}  // namespace

PgShardLedger::PgShardLedger(std::string database_url, int64_t claim_lock_timeout_ms)
    : session_(std::move(database_url),
               {
                   {pg_queries::kClaimShardName, pg_queries::kClaimShardSql},
                   {pg_queries::kMarkFiredName, pg_queries::kMarkFiredSql},
                   {pg_queries::kReleaseShardName, pg_queries::kReleaseShardSql},
                   {pg_queries::kLoadShardStatesName, pg_queries::kLoadShardStatesSql},
                   {pg_queries::kReadLayoutName, pg_queries::kReadLayoutSql},
                   {pg_queries::kAdvanceShardName, pg_queries::kAdvanceShardSql},
                   {pg_queries::kClaimDebtName, pg_queries::kClaimDebtSql},
                   {pg_queries::kRenewDebtName, pg_queries::kRenewDebtSql},
                   {pg_queries::kSettleDebtName, pg_queries::kSettleDebtSql},
                   {pg_queries::kReleaseDebtName, pg_queries::kReleaseDebtSql},
               }),
      claim_lock_timeout_ms_(claim_lock_timeout_ms) {}

PgShardLedger::~PgShardLedger() = default;

template <typename Fn>
Status PgShardLedger::RunClaim(const char* context, int32_t shard, Fn&& fn) {
  return session_.Run(context, [&](pqxx::connection& conn) -> Status {
    if (claim_lock_timeout_ms_ <= 0) {
      pqxx::nontransaction txn(conn);
      return fn(txn);
    }
    try {
      pqxx::work txn(conn);
      txn.exec0(pg_queries::ClaimLockTimeoutSql(claim_lock_timeout_ms_, session_.citus()));
      Status st = fn(txn);
      if (st.ok()) txn.commit();
      return st;
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() != "55P03") throw;
      return Status::Retryable(std::string(context) + " " + std::to_string(shard) +
                               ": its shard_state row stayed locked for over scheduler.claim_lock_timeout (" +
                               std::to_string(claim_lock_timeout_ms_) +
                               " ms), as a Citus shard move or another writer holds it; the shard is retried, the "
                               "others fire meanwhile");
    }
  });
}

StatusOr<ShardClaim> PgShardLedger::Claim(int32_t shard, int64_t up_to_minute, const std::string& node,
                                          int64_t lease_ms) {
  ShardClaim claim;
  Status st = RunClaim("claim shard", shard, [&](pqxx::transaction_base& txn) {
    const pqxx::result r =
        txn.exec_prepared(pg_queries::kClaimShardName, shard, node, up_to_minute, lease_ms);
    if (r.empty()) {
      return Status::FailedPrecondition("shard " + std::to_string(shard) +
                                        " has no shard_state row; does shard_count match the database?");
    }
    claim.claimed = r[0][0].as<bool>();
    if (!r[0][1].is_null()) claim.fired_through = r[0][1].as<int64_t>();
    claim.read_fence = r[0][2].as<int64_t>();
    if (Status st = LayoutOfField(r[0][3], &claim.layout); !st.ok()) return st;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return claim;
}

Status PgShardLedger::MarkFired(int32_t shard, int64_t minute, const std::string& node, int64_t lease_ms,
                                bool release) {
  return session_.Run("mark fired", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r =
        txn.exec_prepared(pg_queries::kMarkFiredName, shard, minute, node, lease_ms, release);
    if (r.affected_rows() == 0) {
      return Status::FailedPrecondition("claim lost: shard " + std::to_string(shard) + " is not held by " +
                                        node);
    }
    return Status::Ok();
  });
}

Status PgShardLedger::Advance(int32_t shard, int64_t minute, const MinuteRange& add_debt,
                              const std::string& node) {
  return session_.Run("advance shard", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r =
        txn.exec_prepared(pg_queries::kAdvanceShardName, shard, minute, add_debt.first, add_debt.last, node);
    if (r.affected_rows() == 0) {
      return Status::FailedPrecondition("claim lost: shard " + std::to_string(shard) + " is not held by " +
                                        node);
    }
    return Status::Ok();
  });
}

StatusOr<DebtClaim> PgShardLedger::ClaimDebt(int32_t shard, const std::string& node, int64_t lease_ms) {
  DebtClaim claim;
  Status st = RunClaim("claim debt of shard", shard, [&](pqxx::transaction_base& txn) {
    const pqxx::result r = txn.exec_prepared(pg_queries::kClaimDebtName, shard, node, lease_ms);
    if (r.empty()) return Status::Ok();
    claim.claimed = true;
    claim.lowest = MinuteRange{r[0][0].as<int64_t>(), r[0][1].as<int64_t>()};
    claim.owed_minutes = r[0][2].as<int64_t>();
    claim.read_fence = r[0][3].as<int64_t>();
    if (Status st = LayoutOfField(r[0][4], &claim.layout); !st.ok()) return st;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return claim;
}

Status PgShardLedger::RenewDebt(int32_t shard, const std::string& node, int64_t lease_ms) {
  return session_.Run("renew debt lease", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r = txn.exec_prepared(pg_queries::kRenewDebtName, shard, node, lease_ms);
    if (r.affected_rows() == 0) {
      return Status::FailedPrecondition("debt lease lost: shard " + std::to_string(shard) +
                                        " is not held by " + node);
    }
    return Status::Ok();
  });
}

Status PgShardLedger::SettleDebt(int32_t shard, const MinuteRange& paid, const std::string& node) {
  return session_.Run("settle debt", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r = txn.exec_prepared(pg_queries::kSettleDebtName, shard, paid.first, paid.last, node);
    if (r.affected_rows() == 0) {
      return Status::FailedPrecondition("debt lease lost: shard " + std::to_string(shard) +
                                        " is not held by " + node);
    }
    return Status::Ok();
  });
}

Status PgShardLedger::ReleaseDebt(int32_t shard, const std::string& node) {
  return session_.Run("release debt lease", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    txn.exec_prepared(pg_queries::kReleaseDebtName, shard, node);
    return Status::Ok();
  });
}

Status PgShardLedger::Release(int32_t shard, const std::string& node) {
  return session_.Run("release shard", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    txn.exec_prepared(pg_queries::kReleaseShardName, shard, node);
    return Status::Ok();
  });
}

StatusOr<std::vector<ShardState>> PgShardLedger::LoadStates() {
  std::vector<ShardState> states;
  Status st = session_.Run("load shard states", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r = txn.exec_prepared(pg_queries::kLoadShardStatesName);
    states.reserve(r.size());
    for (const pqxx::row& row : r) {
      ShardState s;
      s.shard = row[0].as<int32_t>();
      if (!row[1].is_null()) s.fired_through = row[1].as<int64_t>();
      s.claim_node = row[2].as<std::string>();
      if (!row[3].is_null()) s.claim_until = row[3].as<int64_t>();
      s.claim_live = row[4].as<bool>();
      s.debt_minutes = row[5].as<int64_t>();
      if (!row[6].is_null()) s.debt_first = row[6].as<int64_t>();
      s.debt_node = row[7].as<std::string>();
      s.debt_live = row[8].as<bool>();
      states.push_back(std::move(s));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return states;
}

StatusOr<ShardLayout> PgShardLedger::ReadLayout() {
  ShardLayout layout;
  Status st = session_.Run("read shard layout", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r = txn.exec_prepared(pg_queries::kReadLayoutName);
    if (r.empty()) return Status::FailedPrecondition("the database has no shard layout record: run `belfry migrate`");
    return LayoutOfField(r[0][0], &layout);
  });
  if (!st.ok()) return st;
  return layout;
}

}  // namespace belfry
