#include "pg/pg_placing_shard_states.h"

#include <fmt/format.h>

#include <pqxx/result>
#include <stdexcept>

#include "pg/array_literal.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_rows.h"

namespace belfry {

void LockPlacingShardStates(pqxx::transaction_base& txn, bool citus, const std::string& txn_now,
                            const std::vector<int32_t>& shards, PlacingShardProgress* progress) {
  namespace q = pg_queries;
  std::vector<int32_t> todo;
  for (int32_t shard : shards) {
    if (progress->count(shard) == 0) todo.push_back(shard);
  }
  if (todo.empty()) return;
  auto record = [&](const pqxx::result& rows) {
    for (const pqxx::row& row : rows) (*progress)[row[0].as<int32_t>()] = OptionalInt64(row[1]);
  };
  for (int32_t shard : todo) progress->emplace(shard, std::nullopt);  // held even when missing
  if (citus) {
    for (int32_t shard : todo) record(txn.exec_prepared(q::kLockPlacingShardStateName, shard, txn_now));
    return;
  }
  record(txn.exec_prepared(q::kLockPlacingShardStatesName, ArrayLiteral(todo), txn_now));
}

std::optional<int64_t> NextMinuteOf(const PlacingShardProgress& progress, int32_t shard) {
  const auto it = progress.find(shard);
  if (it == progress.end()) throw std::logic_error(fmt::format("shard_state row {} is not held", shard));
  return it->second;
}

}  // namespace belfry
