// PgShardLedger: the ShardLedger over the shard_state table. Leases are measured by the
// database's clock (now()), so the nodes' own clocks play no part in who holds a shard.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "belfry/shard_ledger.h"
#include "pg/pg_session.h"

namespace belfry {

// Thread-compatible: one instance per thread. Every call is one autocommitted statement (one
// round trip), except the claims when `claim_lock_timeout_ms` > 0 (below). Connects lazily; a
// broken connection makes the call Retryable and is reopened by the next call.
class PgShardLedger final : public ShardLedger {
 public:
  // `claim_lock_timeout_ms` > 0: Claim and ClaimDebt give up after waiting that long for a lock
  // (SQLSTATE 55P03, a Retryable status that names the shard), in a transaction of their own
  // with `SET LOCAL lock_timeout` (on Citus propagated to the worker that holds the row). A
  // shard whose row is locked for long, as Citus's `block_writes` shard move locks it, then
  // costs a firing worker that long, not the whole move: the pool retries the shard with its
  // back-off and fires the others meanwhile (docs/scale-out.md). 0: claims wait like every
  // other statement. Only the claims give up: a firing's later writes (MarkFired, Advance,
  // SettleDebt) wait, because giving up there would leave its sent triggers unrecorded.
  explicit PgShardLedger(std::string database_url, int64_t claim_lock_timeout_ms = 0);
  PgShardLedger(const PgShardLedger&) = delete;
  PgShardLedger& operator=(const PgShardLedger&) = delete;
  ~PgShardLedger() override;

  // FailedPrecondition when the shard has no shard_state row (shard_count disagrees with the
  // database, or it was never migrated). On claimed == false, fired_through is the stored value.
  StatusOr<ShardClaim> Claim(int32_t shard, int64_t up_to_minute, const std::string& node,
                             int64_t lease_ms) override;
  // FailedPrecondition("claim lost") when `node` does not hold the shard's claim.
  Status MarkFired(int32_t shard, int64_t minute, const std::string& node, int64_t lease_ms,
                   bool release) override;
  // FailedPrecondition("claim lost") when `node` does not hold the claim.
  Status Advance(int32_t shard, int64_t minute, const MinuteRange& add_debt,
                 const std::string& node) override;
  // Releasing a claim that `node` does not hold is a no-op (Ok).
  Status Release(int32_t shard, const std::string& node) override;
  StatusOr<DebtClaim> ClaimDebt(int32_t shard, const std::string& node, int64_t lease_ms) override;
  // FailedPrecondition("debt lease lost") when `node` does not hold the debt lease.
  Status RenewDebt(int32_t shard, const std::string& node, int64_t lease_ms) override;
  Status SettleDebt(int32_t shard, const MinuteRange& paid, const std::string& node) override;
  Status ReleaseDebt(int32_t shard, const std::string& node) override;
  StatusOr<std::vector<ShardState>> LoadStates() override;
  StatusOr<ShardLayout> ReadLayout() override;

 private:
  // Runs one claim statement through `fn(pqxx::transaction_base&)`, under the lock timeout.
  template <typename Fn>
  Status RunClaim(const char* context, int32_t shard, Fn&& fn);

  PgSession session_;
  const int64_t claim_lock_timeout_ms_;
};

}  // namespace belfry
