#include "pg/pg_job_change_log.h"

#include <optional>
#include <pqxx/result>

#include "core/job_change.h"
#include "core/job_json.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_job_change_queries.h"
#include "pg/pg_queries.h"
#include "pg/pg_rows.h"

namespace belfry {

void JobChangeLog::Add(int32_t shard, const std::string& id, JobChange context) {
  context.job_id = id;
  entries_.emplace_back(Key{shard, id}, std::move(context));
}

JobChangeLog::Snapshots JobChangeLog::Read(pqxx::transaction_base& txn, const char* statement) const {
  Snapshots out;
  if (entries_.empty()) return out;
  JsonArrayChunks keys;
  for (const auto& [key, change] : entries_) {
    keys.BeginObject();
    keys.String("id", key.second);
    keys.Int("shard", key.first);
    keys.EndObject();
  }
  for (const std::string& chunk : keys.Finish()) {
    for (const pqxx::row& row : txn.exec_prepared(statement, chunk)) {
      StoredJob job = StoredJobFromRow(row);
      Key key{job.spec.shard, job.spec.id};
      out.insert_or_assign(std::move(key), std::move(job));
    }
  }
  return out;
}

void JobChangeLog::LockBefore(pqxx::transaction_base& txn) { before_ = Read(txn, pg_queries::kLockJobsByKeysName); }

int64_t JobChangeLog::RecordAfter(pqxx::transaction_base& txn) {
  if (entries_.empty()) return 0;
  const Snapshots after = Read(txn, pg_queries::kReadJobsByKeysName);
  auto find = [](const Snapshots& s, const Key& k) {
    const auto it = s.find(k);
    return it == s.end() ? std::optional<StoredJob>() : std::optional<StoredJob>(it->second);
  };
  JsonArrayChunks rows;
  int64_t n = 0;
  for (const auto& [key, context] : entries_) {
    std::optional<JobChange> change;
    if (!context.detail_json.empty()) {
      const auto it = after.find(key);
      if (it == after.end()) continue;
      change = context;
      change->before_json = EncodeJobJson(it->second);
      change->after_json = change->before_json;
    } else {
      change = JobChangeBetween(key.second, context.op, find(before_, key), find(after, key));
      if (!change) continue;
    }
    rows.BeginObject();
    rows.String("job_id", key.second);
    rows.String("op", context.op);
    rows.String("bulk_id", context.bulk_id);
    rows.String("actor", context.actor);
    rows.String("reason", context.reason);
    rows.Int("src_partition", context.source.partition);
    rows.Int("src_offset", context.source.offset);
    rows.Int("command_ts", context.source.timestamp_ms);
    // As strings, stored as text: a value nested in the array would be parsed (and PostgreSQL
    // refuses to de-escape \u0000, which a job's details may hold).
    rows.String("before", change->before_json);
    rows.String("after", change->after_json);
    rows.String("detail", context.detail_json);
    rows.EndObject();
    ++n;
  }
  for (const std::string& chunk : rows.Finish()) txn.exec_prepared(pg_queries::kInsertJobChangesName, chunk);
  return n;
}

}  // namespace belfry
