// JobChangeLog: the audit trail's writes (docs/audit-trail.md), shared by the command path
// (pg_job_store.cc) and the bulk operations' steps (pg_job_store_bulk.cc). Within the transaction
// that changes the jobs: Add each job a change may touch, ReadBefore (one read, which locks them),
// make the changes, then RecordAfter (one read, one insert). Set-based: three statements per
// batch, whatever its size. A job the batch created (AddCreated, from the insert's RETURNING) or
// deleted (MarkDeleted) needs neither read; a batch of creates only is one COPY.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <pqxx/transaction_base>
#include <string>
#include <utility>
#include <vector>

#include "belfry/job.h"
#include "belfry/job_change.h"

namespace belfry {

class JobChangeLog final {
 public:
  // `citus`: the database is a Citus coordinator (PgSession::citus). Citus locks rows only in a
  // statement that reaches one shard, so the locking read runs once per belfry shard there
  // (kLockJobsInShardSql), where PostgreSQL runs one statement for the whole batch.
  explicit JobChangeLog(bool citus = false) : citus_(citus) {}

  // A change that job `id` of `shard` may get. `context` carries op, actor, reason, bulk_id and
  // source. A context with detail_json is a fire (a trigger or backfill that stored rows): it is
  // recorded whenever the job exists, with the job as both before and after; any other change is
  // recorded only when the job changed (JobChangeBetween).
  void Add(int32_t shard, const std::string& id, JobChange context);
  // A job this transaction created, as the insert returned it: recorded as a create, unread.
  void AddCreated(StoredJob job, JobChange context);
  // A job added (Add) and read before, which this transaction then created: its after, unread.
  void MarkCreated(StoredJob job);
  // Job `id` of `shard`, added before, was deleted by this transaction: its after is nothing,
  // unread.
  void MarkDeleted(int32_t shard, const std::string& id);
  // Whether this transaction created job `id` of `shard` (AddCreated or MarkCreated), and how
  // many jobs it created.
  bool Created(int32_t shard, const std::string& id) const { return created_.count(Key{shard, id}) > 0; }
  size_t created_count() const { return created_.size(); }
  bool empty() const { return entries_.empty(); }

  // Reads the jobs added since the last call as they are now: locking them in (shard, id) order
  // when `lock`, or not, when the caller holds their locks already. A bulk step calls it once per
  // page, and RecordAfter once for all its pages.
  void ReadBefore(pqxx::transaction_base& txn, bool lock = true);

  // Reads the added jobs again and stores one job_changes row per change. Returns how many.
  int64_t RecordAfter(pqxx::transaction_base& txn);

 private:
  using Key = std::pair<int32_t, std::string>;
  using Snapshots = std::map<Key, StoredJob>;
  // The jobs of entries_[from..] as they are now.
  Snapshots Read(pqxx::transaction_base& txn, bool lock, size_t from = 0) const;

  const bool citus_;

  std::vector<std::pair<Key, JobChange>> entries_;
  Snapshots before_;
  Snapshots created_;  // the jobs AddCreated and MarkCreated gave, by key
  std::set<Key> deleted_;
  size_t read_before_ = 0;  // entries_[0..read_before_) have their before_ read
};

}  // namespace belfry
