// PgJobStore's audit trail reads and its publishing (docs/audit-trail.md). The changes are
// recorded by JobChangeLog (pg_job_change_log.h) in the transactions that make them, as what
// changed; the history and the change events show them whole (ExpandJobChanges).
#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>

#include "core/job_change.h"
#include "core/job_json.h"
#include "core/json_writer.h"
#include "core/shard_layout.h"
#include "pg/array_literal.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_job_change_queries.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_job_store.h"
#include "pg/pg_job_writes.h"
#include "pg/pg_rows.h"

namespace belfry {
namespace {

std::string TextOrEmpty(const pqxx::field& f) { return f.is_null() ? std::string() : f.as<std::string>(); }

// A row of BELFRY_JOB_CHANGE_COLUMNS.
JobChange JobChangeFromRow(const pqxx::row& r) {
  JobChange c;
  c.change_id = r[0].as<int64_t>();
  c.job_id = r[1].as<std::string>();
  c.op = r[2].as<std::string>();
  c.bulk_id = TextOrEmpty(r[3]);
  c.actor = TextOrEmpty(r[4]);
  c.reason = TextOrEmpty(r[5]);
  c.source.partition = r[6].as<int32_t>();
  c.source.offset = r[7].as<int64_t>();
  c.source.timestamp_ms = r[8].as<int64_t>();
  c.changed_at = r[9].as<int64_t>();
  c.before_json = TextOrEmpty(r[10]);
  c.after_json = TextOrEmpty(r[11]);
  c.detail_json = TextOrEmpty(r[12]);
  return c;
}

// The whole views of job `job_id`'s changes `newest_first` (consecutive, none newer missing),
// from the job as `txn` sees it (ExpandJobChanges). Reads the job only when a change needs it.
void ExpandChangesInTxn(pqxx::transaction_base& txn, const std::string& job_id, const ShardLayout& layout,
                        std::vector<JobChange>* newest_first) {
  if (newest_first->empty()) return;
  // A newest change that is a create or a delete is whole, and the walk starts from it.
  std::string current;
  if (StoresChangedFields(newest_first->front())) {
    if (const std::optional<StoredJob> job = ReadJobInTxn(txn, job_id, layout)) current = EncodeJobJson(*job);
  }
  ExpandJobChanges(current, newest_first);
}

}  // namespace

StatusOr<std::vector<JobChange>> PgJobStore::ListJobChanges(const std::string& job_id, int64_t before_change_id,
                                                            int32_t limit) {
  std::vector<JobChange> out;
  const int64_t before = before_change_id > 0 ? before_change_id : std::numeric_limits<int64_t>::max();
  Status st = session_.Run("list job changes", [&](pqxx::connection& conn) {
    // One snapshot for the page, the changes after it and the job, which the page's whole views
    // are built from (docs/audit-trail.md: what is stored is what changed).
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> txn(conn, "list_job_changes");
    if (Status s = LoadLayout(txn, false); !s.ok()) return s;
    out.clear();
    for (const pqxx::row& row :
         txn.exec_prepared(pg_queries::kListJobChangesName, job_id, before, std::clamp(limit, 1, 1000))) {
      out.push_back(JobChangeFromRow(row));
    }
    if (out.empty()) return Status::Ok();
    std::vector<JobChange> all;
    if (before != std::numeric_limits<int64_t>::max()) {
      for (const pqxx::row& row : txn.exec_prepared(pg_queries::kJobChangesSinceName, job_id, before)) {
        all.push_back(JobChangeFromRow(row));
      }
    }
    const size_t newer = all.size();
    all.insert(all.end(), std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
    ExpandChangesInTxn(txn, job_id, layout_, &all);
    out.assign(std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(newer)),
               std::make_move_iterator(all.end()));
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<int64_t> PgJobStore::PublishChanges(int32_t limit,
                                             const std::function<Status(const std::vector<JobChange>&)>& publish) {
  int64_t marked = 0;
  Status st = session_.Run("publish job changes", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    marked = 0;
    // No transaction is open while `publish` waits for the broker: the round holds a
    // session-level advisory lock instead. A crash between the publish and the mark publishes
    // the changes again (at least once, as before).
    {
      pqxx::nontransaction lock(conn, "lock_change_publisher");
      if (!lock.exec_prepared1(q::kLockChangePublisherName, q::kChangePublisherLockKey)[0].as<bool>()) {
        return Status::Ok();  // another node publishes
      }
    }
    struct Unlock {
      pqxx::connection& conn;
      ~Unlock() {
        try {
          pqxx::nontransaction txn(conn, "unlock_change_publisher");
          txn.exec_prepared(q::kUnlockChangePublisherName, q::kChangePublisherLockKey);
        } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): a broken connection released it
        }
      }
    } unlock{conn};
    std::vector<JobChange> changes;
    {
      // The batch, the later changes of its jobs and those jobs, on one snapshot: each event's
      // before and after are whole views, built from what the rows store (ExpandJobChanges).
      pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> txn(conn, "read_job_changes");
      for (const pqxx::row& row : txn.exec_prepared(q::kUnpublishedChangesName, std::max(1, limit))) {
        changes.push_back(JobChangeFromRow(row));
      }
      if (changes.empty()) return Status::Ok();
      // Each job's changes, newest first: the batch's, after the later ones.
      std::map<std::string, std::vector<JobChange*>> by_job;
      for (auto it = changes.rbegin(); it != changes.rend(); ++it) by_job[it->job_id].push_back(&*it);
      if (std::any_of(changes.begin(), changes.end(), StoresChangedFields)) {
        if (Status s = LoadLayout(txn, false); !s.ok()) return s;
        std::string ids = "[";
        for (const auto& [id, list] : by_job) {
          if (ids.size() > 1) ids.push_back(',');
          AppendJsonString(&ids, id);
        }
        ids.push_back(']');
        std::map<std::string, std::vector<JobChange>> later;
        for (const pqxx::row& row :
             txn.exec_prepared(q::kLaterChangesOfJobsName, ids, changes.back().change_id)) {
          JobChange c = JobChangeFromRow(row);
          later[c.job_id].push_back(std::move(c));
        }
        // Each job's walk, newest first: its later changes, then the batch's. The jobs whose
        // newest change is neither a create nor a delete are read as they are, in one statement.
        std::map<std::string, std::vector<JobChange>> walks;
        JsonArrayChunks keys;
        for (auto& [id, list] : by_job) {
          std::vector<JobChange>& walk = walks[id];
          walk = std::move(later[id]);
          for (JobChange* c : list) walk.push_back(*c);
          if (StoresChangedFields(walk.front())) {
            keys.BeginObject();
            keys.String("id", id);
            keys.Int("shard", StoredShard(id, layout_));
            keys.EndObject();
          }
        }
        std::map<std::string, std::string> current;
        for (const std::string& chunk : keys.Finish()) {
          for (const pqxx::row& row : txn.exec_prepared(q::kReadJobsByKeysName, chunk)) {
            StoredJob job = StoredJobFromRow(row);
            current[job.spec.id] = EncodeJobJson(job);
          }
        }
        for (auto& [id, list] : by_job) {
          std::vector<JobChange>& walk = walks[id];
          const auto it = current.find(id);
          if (StoresChangedFields(walk.front()) && it == current.end()) {
            ExpandChangesInTxn(txn, id, layout_, &walk);  // stored under another shard, or gone
          } else {
            ExpandJobChanges(it == current.end() ? std::string() : it->second, &walk);
          }
          const size_t skip = walk.size() - list.size();
          for (size_t k = 0; k < list.size(); ++k) *list[k] = std::move(walk[skip + k]);
        }
      }
      txn.commit();
    }
    if (Status s = publish(changes); !s.ok()) return s;
    std::vector<int64_t> ids;
    ids.reserve(changes.size());
    for (const JobChange& c : changes) ids.push_back(c.change_id);
    pqxx::nontransaction txn(conn, "mark_job_changes_published");
    marked = static_cast<int64_t>(txn.exec_prepared(q::kMarkChangesPublishedName, ArrayLiteral(ids)).affected_rows());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return marked;
}

StatusOr<int64_t> PgJobStore::SweepJobChanges(EpochMs before_ms, int32_t max_rows) {
  int64_t deleted = 0;
  Status st = session_.Run("sweep job changes", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    deleted = static_cast<int64_t>(
        txn.exec_prepared(pg_queries::kSweepJobChangesName, before_ms, std::max(1, max_rows)).affected_rows());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return deleted;
}

}  // namespace belfry
