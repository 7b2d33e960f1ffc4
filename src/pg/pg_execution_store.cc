#include "pg/pg_execution_store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>
#include <utility>

#include "core/execution_report.h"
#include "core/json_writer.h"
#include "pg/pg_execution_queries.h"

namespace belfry {
namespace {

std::vector<PreparedStatement> ExecutionStatements() {
  namespace q = pg_queries;
  return {
      {q::kInsertExecutionsName, q::kInsertExecutionsSql},
      {q::kLockJobStatsName, q::kLockJobStatsSql},
      {q::kGetJobStatsName, q::kGetJobStatsSql},
      {q::kUpsertJobStatsName, q::kUpsertJobStatsSql},
      {q::kListExecutionsName, q::kListExecutionsSql},
      {q::kListExecutionsAfterName, q::kListExecutionsAfterSql},
      {q::kTrimExecutionsName, q::kTrimExecutionsSql},
  };
}

std::optional<ExecutionStatus> StatusFromName(std::string_view s) {
  if (s == "succeeded") return ExecutionStatus::kSucceeded;
  if (s == "failed") return ExecutionStatus::kFailed;
  if (s == "running") return ExecutionStatus::kRunning;
  return std::nullopt;
}

std::optional<int64_t> OptionalInt64(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<int64_t>();
}

void Field(std::string* out, bool* first, const char* name) {
  if (!*first) out->push_back(',');
  *first = false;
  out->push_back('"');
  out->append(name);
  out->append("\":");
}
void IntField(std::string* out, bool* first, const char* name, const std::optional<int64_t>& v) {
  Field(out, first, name);
  out->append(v ? std::to_string(*v) : "null");
}
void StringField(std::string* out, bool* first, const char* name, std::string_view v) {
  Field(out, first, name);
  AppendJsonString(out, v);
}

JobStats StatsFromRow(const pqxx::row& row) {
  JobStats s;
  s.job_id = row[0].as<std::string>();
  if (!row[1].is_null()) s.last_status = StatusFromName(row[1].as<std::string>());
  s.last_scheduled_for_ms = row[2].as<int64_t>();
  s.last_attempt = row[3].as<int32_t>();
  s.last_error = row[4].as<std::string>();
  s.last_finished_at = OptionalInt64(row[5]);
  s.consecutive_failures = row[6].as<int64_t>();
  s.total_succeeded = row[7].as<int64_t>();
  s.total_failed = row[8].as<int64_t>();
  return s;
}

}  // namespace

std::string ExecutionCursor(const ExecutionReport& r) {
  return std::to_string(r.scheduled_for_ms) + "." + std::to_string(r.attempt) + "." +
         ExecutionStatusName(r.status);
}

bool ParseExecutionCursor(const std::string& cursor, int64_t* scheduled_for_ms, int32_t* attempt,
                          std::string* status) {
  const size_t a = cursor.find('.');
  if (a == std::string::npos) return false;
  const size_t b = cursor.find('.', a + 1);
  if (b == std::string::npos) return false;
  const char* begin = cursor.data();
  auto r1 = std::from_chars(begin, begin + a, *scheduled_for_ms);
  if (r1.ec != std::errc() || r1.ptr != begin + a) return false;
  auto r2 = std::from_chars(begin + a + 1, begin + b, *attempt);
  if (r2.ec != std::errc() || r2.ptr != begin + b) return false;
  *status = cursor.substr(b + 1);
  return StatusFromName(*status).has_value();
}

PgExecutionStore::PgExecutionStore(std::string database_url)
    : session_(std::move(database_url), ExecutionStatements()) {}

PgExecutionStore::~PgExecutionStore() = default;

Status PgExecutionStore::ApplyReports(const std::vector<ExecutionReport>& reports) {
  if (reports.empty()) return Status::Ok();
  // Sorted by key so that concurrent batches lock in the same order.
  std::vector<const ExecutionReport*> sorted;
  for (const ExecutionReport& r : reports) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const ExecutionReport* x, const ExecutionReport* y) {
    return std::make_tuple(x->job_id, x->scheduled_for_ms, x->attempt, static_cast<int>(x->status)) <
           std::make_tuple(y->job_id, y->scheduled_for_ms, y->attempt, static_cast<int>(y->status));
  });
  std::string json = "[";
  for (const ExecutionReport* r : sorted) {
    if (json.size() > 1) json.push_back(',');
    json.push_back('{');
    bool first = true;
    StringField(&json, &first, "job_id", r->job_id);
    IntField(&json, &first, "scheduled_for_ms", r->scheduled_for_ms);
    IntField(&json, &first, "attempt", r->attempt);
    StringField(&json, &first, "status", ExecutionStatusName(r->status));
    StringField(&json, &first, "error", r->error);
    IntField(&json, &first, "started_ms", r->started_at);
    IntField(&json, &first, "finished_ms", r->finished_at);
    StringField(&json, &first, "worker", r->worker);
    IntField(&json, &first, "src_partition", r->source.partition);
    IntField(&json, &first, "src_offset", r->source.offset);
    json.push_back('}');
  }
  json.push_back(']');

  return session_.Run("apply execution reports", [&](pqxx::connection& conn) {
    pqxx::work txn(conn, "apply_execution_reports");
    const pqxx::result inserted = txn.exec_prepared(pg_queries::kInsertExecutionsName, json);
    std::map<std::string, std::vector<ExecutionReport>> fresh;
    for (const pqxx::row& row : inserted) {
      ExecutionReport r;
      r.job_id = row[0].as<std::string>();
      r.scheduled_for_ms = row[1].as<int64_t>();
      r.attempt = row[2].as<int32_t>();
      r.status = StatusFromName(row[3].as<std::string>()).value_or(ExecutionStatus::kRunning);
      r.error = row[4].as<std::string>();
      r.finished_at = OptionalInt64(row[5]);
      if (r.status == ExecutionStatus::kRunning) continue;
      fresh[r.job_id].push_back(std::move(r));
    }
    if (!fresh.empty()) {
      std::string ids = "{";
      for (const auto& [id, unused] : fresh) {
        if (ids.size() > 1) ids.push_back(',');
        AppendJsonString(&ids, id);  // a JSON string is a valid array-literal element
      }
      ids.push_back('}');
      std::map<std::string, JobStats> current;
      for (const pqxx::row& row : txn.exec_prepared(pg_queries::kLockJobStatsName, ids)) {
        JobStats s = StatsFromRow(row);
        current.emplace(s.job_id, std::move(s));
      }
      std::string upserts = "[";
      for (auto& [id, reports_of_job] : fresh) {
        auto it = current.find(id);
        const JobStats s =
            FoldJobStats(it == current.end() ? std::nullopt : std::optional<JobStats>(it->second), id,
                         std::move(reports_of_job));
        if (upserts.size() > 1) upserts.push_back(',');
        upserts.push_back('{');
        bool first = true;
        StringField(&upserts, &first, "job_id", s.job_id);
        StringField(&upserts, &first, "last_status",
                    s.last_status ? ExecutionStatusName(*s.last_status) : "");
        IntField(&upserts, &first, "last_scheduled_for_ms", s.last_scheduled_for_ms);
        IntField(&upserts, &first, "last_attempt", s.last_attempt);
        StringField(&upserts, &first, "last_error", s.last_error);
        IntField(&upserts, &first, "last_finished_ms", s.last_finished_at);
        IntField(&upserts, &first, "consecutive_failures", s.consecutive_failures);
        IntField(&upserts, &first, "total_succeeded", s.total_succeeded);
        IntField(&upserts, &first, "total_failed", s.total_failed);
        upserts.push_back('}');
      }
      upserts.push_back(']');
      txn.exec_prepared(pg_queries::kUpsertJobStatsName, upserts);
    }
    txn.commit();
    return Status::Ok();
  });
}

StatusOr<ExecutionPage> PgExecutionStore::ListExecutions(const std::string& job_id, int32_t limit,
                                                         const std::string& cursor) {
  limit = std::clamp(limit, 1, 1000);
  int64_t after_sf = 0;
  int32_t after_attempt = 0;
  std::string after_status;
  if (!cursor.empty() && !ParseExecutionCursor(cursor, &after_sf, &after_attempt, &after_status)) {
    return Status::Invalid("bad_cursor", "cursor is not one this API returned");
  }
  ExecutionPage page;
  Status st = session_.Run("list executions", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r = cursor.empty()
                               ? txn.exec_prepared(pg_queries::kListExecutionsName, job_id, limit + 1)
                               : txn.exec_prepared(pg_queries::kListExecutionsAfterName, job_id, limit + 1,
                                                   after_sf, after_attempt, after_status);
    for (const pqxx::row& row : r) {
      if (static_cast<int32_t>(page.records.size()) == limit) {
        page.next_cursor = ExecutionCursor(page.records.back().report);
        break;
      }
      ExecutionRecord rec;
      ExecutionReport& e = rec.report;
      e.job_id = row[0].as<std::string>();
      e.scheduled_for_ms = row[1].as<int64_t>();
      e.attempt = row[2].as<int32_t>();
      e.status = StatusFromName(row[3].as<std::string>()).value_or(ExecutionStatus::kRunning);
      e.error = row[4].as<std::string>();
      e.started_at = OptionalInt64(row[5]);
      e.finished_at = OptionalInt64(row[6]);
      e.worker = row[7].as<std::string>();
      e.source.partition = row[8].as<int32_t>();
      e.source.offset = row[9].as<int64_t>();
      rec.received_at = row[10].as<int64_t>();
      page.records.push_back(std::move(rec));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return page;
}

StatusOr<std::optional<JobStats>> PgExecutionStore::GetJobStats(const std::string& job_id) {
  std::optional<JobStats> stats;
  Status st = session_.Run("get job stats", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r = txn.exec_prepared(pg_queries::kGetJobStatsName, job_id);
    if (!r.empty()) stats = StatsFromRow(r[0]);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return stats;
}

StatusOr<int64_t> PgExecutionStore::TrimHistory(int32_t keep_per_job) {
  int64_t deleted = 0;
  Status st = session_.Run("trim execution history", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    deleted = txn.exec_prepared(pg_queries::kTrimExecutionsName, keep_per_job).affected_rows();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return deleted;
}

}  // namespace belfry
