// PgJobStore's reads for the admin API and the CLI: one job (with its counters), a page of
// jobs, the job count.
#include "core/pagination.h"
#include "pg/pg_job_store.h"

#include <algorithm>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <utility>

#include "core/shard_layout.h"
#include "pg/pg_job_writes.h"
#include "pg/pg_read_queries.h"
#include "pg/pg_rows.h"

namespace belfry {
StatusOr<std::optional<StoredJob>> PgJobStore::GetJob(const std::string& id) {
  std::optional<StoredJob> job;
  Status st = session_.Run("get job", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    if (Status st = LoadLayout(txn, false); !st.ok()) return st;
    job = ReadJobInTxn(txn, id, layout_);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return job;
}

StatusOr<std::optional<JobAndStats>> PgJobStore::GetJobAndStats(const std::string& id) {
  std::optional<JobAndStats> view;
  Status st = session_.Run("get job view", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    if (Status st = LoadLayout(txn, false); !st.ok()) return st;
    const int32_t shard = StoredShard(id, layout_);
    pqxx::result r;
    if (shard < pg_queries::kJobPartitions) {
      const std::string name = pg_queries::GetJobViewInPartitionName(shard);
      conn.prepare(name, pg_queries::GetJobViewInPartitionSql(shard));  // idempotent; sent on first use
      r = txn.exec_prepared(name, id);
    } else {
      r = txn.exec_prepared(pg_queries::kGetJobViewInShardName, id, shard);
    }
    if (r.empty()) r = txn.exec_prepared(pg_queries::kGetJobViewName, id);
    if (r.empty()) return Status::Ok();
    view.emplace();
    view->job = StoredJobFromRow(r[0]);
    view->stats_read = true;
    if (!r[0][pg_queries::kJobViewStatsColumn].is_null()) {
      view->stats = JobStatsFromRow(r[0], pg_queries::kJobViewStatsColumn);
    }
    const pqxx::result e = txn.exec_prepared(pg_queries::kGetDeliveryErrorName, id);
    if (!e.empty()) {
      DeliveryErrorRecord d;
      d.job_id = id;
      d.topic = e[0][0].as<std::string>();
      d.slot_ms = e[0][1].as<int64_t>();
      d.error = e[0][2].as<std::string>();
      d.at_ms = e[0][3].as<int64_t>();
      view->last_delivery_error = std::move(d);
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return view;
}

StatusOr<JobPage> PgJobStore::ListJobs(const JobListFilter& filter) {
  const int32_t page_size = std::clamp(filter.limit, 1, kMaxJobPage);
  const int32_t limit = page_size + 1;  // the extra row says whether another page exists
  std::vector<StoredJob> jobs;
  Status st = session_.Run("list jobs", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    pqxx::nontransaction txn(conn);
    pqxx::result r;
    const bool by_owner = !filter.owner.empty();
    const bool by_topic = !filter.topic.empty();
    const bool by_labels = !filter.labels.empty() && filter.labels != "{}";
    // An id prefix: one range of the index where the collation keeps a prefix's ids together.
    const std::string below = filter.id_prefix.empty() ? std::string() : PrefixUpperBound(filter.id_prefix);
    if (!filter.id_prefix.empty() && session_.byte_ordered_text() && !below.empty()) {
      r = txn.exec_prepared(q::kListJobsByPrefixName, filter.after_id, limit, filter.id_prefix, filter.owner,
                            filter.topic, by_labels ? filter.labels : std::string("{}"), below);
    } else if (!filter.id_prefix.empty()) {
      r = txn.exec_prepared(q::kListJobsByPrefixFilterName, filter.after_id, limit, filter.id_prefix, filter.owner,
                            filter.topic, by_labels ? filter.labels : std::string("{}"));
    } else if (by_labels) {
      r = txn.exec_prepared(q::kListJobsByLabelsName, filter.after_id, limit, filter.owner, filter.topic,
                            filter.labels);
    } else if (by_owner && by_topic) {
      r = txn.exec_prepared(q::kListJobsByOwnerTopicName, filter.after_id, limit, filter.owner, filter.topic);
    } else if (by_owner) {
      r = txn.exec_prepared(q::kListJobsByOwnerName, filter.after_id, limit, filter.owner);
    } else if (by_topic) {
      r = txn.exec_prepared(q::kListJobsByTopicName, filter.after_id, limit, filter.topic);
    } else {
      r = txn.exec_prepared(q::kListJobsName, filter.after_id, limit);
    }
    jobs.reserve(r.size());
    for (const pqxx::row& row : r) jobs.push_back(StoredJobFromRow(row));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return JobPageOf(std::move(jobs), page_size);
}

StatusOr<int64_t> PgJobStore::CountJobs() {
  int64_t count = 0;
  Status st = session_.Run("count jobs", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    count = txn.exec_prepared(pg_queries::kCountJobsName)[0][0].as<int64_t>();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return count;
}

}  // namespace belfry
