#include "pg/pg_job_change_log.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <pqxx/result>
#include <pqxx/stream_to>

#include "core/job_change.h"
#include "pg/array_literal.h"
#include "pg/copy_row.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_job_change_queries.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_rows.h"

namespace belfry {
namespace {

using ChangeRow = CopyRow<std::size(pg_queries::kJobChangesCopyColumns)>;

void SetTextOrNull(ChangeRow* row, size_t column, const std::string& text) {
  if (text.empty()) {
    row->SetNull(column);
  } else {
    row->Set(column, text);
  }
}

}  // namespace

void JobChangeLog::Add(int32_t shard, const std::string& id, JobChange context) {
  context.job_id = id;
  entries_.emplace_back(Key{shard, id}, std::move(context));
}

void JobChangeLog::AddCreated(StoredJob job, JobChange context) {
  Key key{job.spec.shard, job.spec.id};
  context.job_id = key.second;
  entries_.emplace_back(key, std::move(context));
  created_.insert_or_assign(std::move(key), std::move(job));
}

void JobChangeLog::MarkCreated(StoredJob job) {
  Key key{job.spec.shard, job.spec.id};
  created_.insert_or_assign(std::move(key), std::move(job));
}

void JobChangeLog::MarkDeleted(int32_t shard, const std::string& id) { deleted_.insert(Key{shard, id}); }

JobChangeLog::Snapshots JobChangeLog::Read(pqxx::transaction_base& txn, bool lock, size_t from) const {
  Snapshots out;
  if (from >= entries_.size()) return out;
  auto add_rows = [&](const pqxx::result& rows) {
    for (const pqxx::row& row : rows) {
      StoredJob job = StoredJobFromRow(row);
      Key key{job.spec.shard, job.spec.id};
      out.insert_or_assign(std::move(key), std::move(job));
    }
  };
  // A job created or deleted here has nothing to read: not there before, or not there after.
  auto unread = [&](const Key& key) { return created_.count(key) == 0 && deleted_.count(key) == 0; };
  if (citus_) {
    std::map<int32_t, std::vector<std::string>> ids_by_shard;  // (shard, id) order: the lock order
    for (size_t i = from; i < entries_.size(); ++i) {
      if (unread(entries_[i].first)) ids_by_shard[entries_[i].first.first].push_back(entries_[i].first.second);
    }
    for (auto& [shard, ids] : ids_by_shard) {
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      add_rows(txn.exec_prepared(lock ? pg_queries::kLockJobsInShardName : pg_queries::kReadJobsInShardName,
                                 shard, ArrayLiteral(ids)));
    }
    return out;
  }
  JsonArrayChunks keys;
  bool any = false;
  for (size_t i = from; i < entries_.size(); ++i) {
    const Key& key = entries_[i].first;
    if (!unread(key)) continue;
    any = true;
    keys.BeginObject();
    keys.String("id", key.second);
    keys.Int("shard", key.first);
    keys.EndObject();
  }
  if (!any) return out;
  const char* statement = lock ? pg_queries::kLockJobsByKeysName : pg_queries::kReadJobsByKeysName;
  for (const std::string& chunk : keys.Finish()) add_rows(txn.exec_prepared(statement, chunk));
  return out;
}

void JobChangeLog::ReadBefore(pqxx::transaction_base& txn, bool lock) {
  Snapshots read = Read(txn, lock, read_before_);
  read_before_ = entries_.size();
  before_.merge(read);  // a job read before keeps its first snapshot
}

int64_t JobChangeLog::RecordAfter(pqxx::transaction_base& txn) {
  if (entries_.empty()) return 0;
  Snapshots after = Read(txn, /*lock=*/false);
  for (const auto& [key, job] : created_) after.insert_or_assign(key, job);
  auto find = [](const Snapshots& s, const Key& k) {
    const auto it = s.find(k);
    return it == s.end() ? std::optional<StoredJob>() : std::optional<StoredJob>(it->second);
  };
  // COPY: the snapshots are JSON text, which a JSON array parameter would escape and parse again.
  std::optional<pqxx::stream_to> copy;
  int64_t n = 0;
  for (const auto& [key, context] : entries_) {
    std::optional<JobChange> change;
    if (!context.detail_json.empty()) {
      const auto it = after.find(key);
      if (it == after.end()) continue;
      change = context;
      change->before_json = JobFireSnapshot(key.second);  // the job as it was: its id is enough
      change->after_json = change->before_json;
    } else {
      change = JobChangeBetween(key.second, context.op, find(before_, key), find(after, key));
      if (!change) continue;
    }
    if (!copy) {
      copy.emplace(txn, pg_queries::kJobChangesTable,
                   std::vector<std::string>(std::begin(pg_queries::kJobChangesCopyColumns),
                                            std::end(pg_queries::kJobChangesCopyColumns)));
    }
    ChangeRow row;
    size_t c = 0;  // kJobChangesCopyColumns order
    row.Set(c++, key.second);
    row.Set(c++, context.op);
    SetTextOrNull(&row, c++, context.bulk_id);
    SetTextOrNull(&row, c++, context.actor);
    SetTextOrNull(&row, c++, context.reason);
    row.SetInt(c++, context.source.partition);
    row.SetInt(c++, context.source.offset);
    row.SetInt(c++, context.source.timestamp_ms);
    SetTextOrNull(&row, c++, change->before_json);
    SetTextOrNull(&row, c++, change->after_json);
    SetTextOrNull(&row, c++, context.detail_json);
    *copy << row.Fields();
    ++n;
  }
  if (copy) copy->complete();
  return n;
}

}  // namespace belfry
