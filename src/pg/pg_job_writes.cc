// The job writes that the command path, manual fires and bulk steps share (pg_job_writes.h).
#include "pg/pg_job_writes.h"

#include <map>
#include <pqxx/result>
#include <utility>

#include "core/fire_limit.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_command_queries.h"
#include "pg/pg_job_change_log.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_rows.h"

namespace belfry {
std::optional<StoredJob> ReadJobInTxn(pqxx::transaction_base& txn, const std::string& id, const ShardLayout& layout) {
  pqxx::result r = txn.exec_prepared(pg_queries::kGetJobInShardName, id, StoredShard(id, layout));
  if (r.empty()) r = txn.exec_prepared(pg_queries::kGetJobName, id);
  if (r.empty()) return std::nullopt;
  return StoredJobFromRow(r[0]);
}

int64_t DeleteJobsAndTheirRows(pqxx::transaction_base& txn, const std::string& chunk, JobChangeLog* changes) {
  const pqxx::result deleted = txn.exec_prepared(pg_queries::kDeleteJobsAndTheirRowsName, chunk);
  if (changes != nullptr) {
    for (const pqxx::row& r : deleted) changes->MarkDeleted(r[1].as<int32_t>(), r[0].as<std::string>());
  }
  return static_cast<int64_t>(deleted.size());
}

void RestartFireLimits(pqxx::transaction_base& txn, const pqxx::result& resumed, const ShardLayout& layout,
                       const TimeZoneDatabase& time_zones) {
  if (resumed.empty()) return;
  std::map<std::pair<int32_t, std::string>, std::pair<EpochMs, EpochMs>> pause_and_resume;
  JsonArrayChunks keys;
  for (const pqxx::row& r : resumed) {
    const auto id = r[0].as<std::string>();
    const auto shard = r[1].as<int32_t>();
    pause_and_resume[{shard, id}] = {r[2].as<int64_t>(), r[3].as<int64_t>()};
    keys.BeginObject();
    keys.String("id", id);
    keys.Int("shard", shard);
    keys.EndObject();
  }
  JsonArrayChunks limits;
  for (const std::string& chunk : keys.Finish()) {
    for (const pqxx::row& row : txn.exec_prepared(pg_queries::kReadJobsByKeysName, chunk)) {
      JobSpec spec = StoredJobFromRow(row).spec;
      const auto it = pause_and_resume.find({spec.shard, spec.id});
      if (!spec.max_fires || it == pause_and_resume.end()) continue;
      // Counted by the job's firing shard and tick of the resume's minute (docs/resharding.md: a
      // count whose window began under an older layout may be one off at that boundary).
      const int32_t stored_shard = spec.shard;
      const FiringBasis basis = FiringBasisOf(layout, EpochMinuteOf(it->second.second), stored_shard);
      spec.shard = basis.shard;
      ResumeFireLimit(time_zones, &spec, it->second.first, it->second.second, basis.tick_ms);
      spec.shard = stored_shard;  // the row's key
      limits.BeginObject();
      limits.String("id", spec.id);
      limits.Int("shard", spec.shard);
      limits.Int("fires_before", spec.fires_before);
      limits.Int("fires_from", spec.fires_from_ms);
      limits.OptionalInt("start", spec.start_at);
      limits.OptionalInt("end", spec.end_at);
      limits.EndObject();
    }
  }
  for (const std::string& chunk : limits.Finish()) txn.exec_prepared(pg_queries::kSetFireLimitsName, chunk);
}

}  // namespace belfry
