// PgJobStore's audit trail reads and its publishing (docs/audit-trail.md). The changes are
// recorded by JobChangeLog (pg_job_change_log.h) in the transactions that make them.
#include <algorithm>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>

#include "pg/pg_job_change_queries.h"
#include "pg/pg_job_store.h"
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

}  // namespace

StatusOr<std::vector<JobChange>> PgJobStore::ListJobChanges(const std::string& job_id, int64_t before_change_id,
                                                            int32_t limit) {
  std::vector<JobChange> out;
  const int64_t before = before_change_id > 0 ? before_change_id : std::numeric_limits<int64_t>::max();
  Status st = session_.Run("list job changes", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    out.clear();
    for (const pqxx::row& row :
         txn.exec_prepared(pg_queries::kListJobChangesName, job_id, before, std::clamp(limit, 1, 1000))) {
      out.push_back(JobChangeFromRow(row));
    }
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
    // session-level advisory lock instead, and each statement commits on its own. A crash between
    // the publish and the mark publishes the changes again (at least once, as before).
    pqxx::nontransaction txn(conn, "publish_job_changes");
    if (!txn.exec_prepared1(q::kLockChangePublisherName, q::kChangePublisherLockKey)[0].as<bool>()) {
      return Status::Ok();  // another node publishes
    }
    struct Unlock {
      pqxx::nontransaction& txn;
      ~Unlock() {
        try {
          txn.exec_prepared(q::kUnlockChangePublisherName, q::kChangePublisherLockKey);
        } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): a broken connection released it
        }
      }
    } unlock{txn};
    std::vector<JobChange> changes;
    for (const pqxx::row& row : txn.exec_prepared(q::kUnpublishedChangesName, std::max(1, limit))) {
      changes.push_back(JobChangeFromRow(row));
    }
    if (changes.empty()) return Status::Ok();
    if (Status s = publish(changes); !s.ok()) return s;
    std::string ids = "{";
    for (size_t i = 0; i < changes.size(); ++i) {
      if (i > 0) ids.push_back(',');
      ids += std::to_string(changes[i].change_id);
    }
    ids.push_back('}');
    marked = static_cast<int64_t>(txn.exec_prepared(q::kMarkChangesPublishedName, ids).affected_rows());
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
