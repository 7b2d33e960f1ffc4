// The shard_state rows whose progress places rows: one-shot commands, manual fires (triggers and
// backfills) and retries go to their planned minute, or to the next minute of the row that fires
// it when that has passed (pg_job_sql.h, "Rows placed by a shard's progress"). The writer holds
// those rows until its commit and passes their next minutes to its insert as values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

namespace belfry {

// The next minute of each shard_state row a writer holds (kLockPlacingShardStates): nullopt when
// the row has neither fired nor a live claim, or is missing.
using PlacingShardProgress = std::map<int32_t, std::optional<int64_t>>;

// Locks the shard_state rows `shards` (ascending) FOR SHARE until the commit, and records each
// one's next minute as of `txn_now` (the transaction's now(): PgJobStore::txn_now_) in `progress`.
// Rows already in `progress` are held already and skipped. One statement on PostgreSQL; on Citus
// (`citus`) one per shard, in order: Citus locks rows only in statements that reach one shard.
// The connection must have kLockPlacingShardStates and kLockPlacingShardState prepared.
void LockPlacingShardStates(pqxx::transaction_base& txn, bool citus, const std::string& txn_now,
                            const std::vector<int32_t>& shards, PlacingShardProgress* progress);

// The next minute of shard_state row `shard`. Throws std::logic_error when the caller does not
// hold it: a row placed by a shard that is not held could be fired between the read and the
// commit, a bug in the caller, never a state of the data.
std::optional<int64_t> NextMinuteOf(const PlacingShardProgress& progress, int32_t shard);

}  // namespace belfry
