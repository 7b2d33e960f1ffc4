#include "pg/pg_execution_store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string_view>
#include <type_traits>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>
#include <utility>

#include "core/execution_report.h"
#include "core/json_writer.h"
#include "core/retry_planner.h"
#include "pg/json_array_chunks.h"
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
      {q::kRetryTargetsName, q::kRetryTargetsSql},
      {q::kLockShardStatesName, q::kLockShardStatesSql},
      {q::kInsertRetriesName, q::kInsertRetriesSql},
      {q::kSupersedeRetriesName, q::kSupersedeRetriesSql},
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

// A PostgreSQL array literal of `values`, in iteration order: {"a","b"} for strings (a JSON string
// is a valid array-literal element), {1,2} for integers.
template <typename Range>
std::string ArrayLiteral(const Range& values) {
  std::string out = "{";
  for (const auto& v : values) {
    if (out.size() > 1) out.push_back(',');
    if constexpr (std::is_integral_v<std::decay_t<decltype(v)>>) {
      out += std::to_string(v);
    } else {
      AppendJsonString(&out, v);
    }
  }
  out.push_back('}');
  return out;
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
  s.last_success_scheduled_for_ms = OptionalInt64(row[9]);
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

PgExecutionStore::PgExecutionStore(std::string database_url, RetryRules retry_rules, Clock& clock)
    : session_(std::move(database_url), ExecutionStatements()), retry_rules_(retry_rules), clock_(clock) {}

PgExecutionStore::~PgExecutionStore() = default;

StatusOr<ExecutionApplyResult> PgExecutionStore::ApplyReports(const std::vector<ExecutionReport>& reports) {
  ExecutionApplyResult result;
  if (reports.empty()) return result;
  // Sorted by key so that concurrent batches lock in the same order.
  std::vector<const ExecutionReport*> sorted;
  for (const ExecutionReport& r : reports) sorted.push_back(&r);
  const auto key = [](const ExecutionReport& r) {
    return std::make_tuple(std::string_view(r.job_id), r.scheduled_for_ms, r.attempt, static_cast<int>(r.status));
  };
  std::sort(sorted.begin(), sorted.end(),
            [&](const ExecutionReport* x, const ExecutionReport* y) { return key(*x) < key(*y); });
  JsonArrayChunks rows;
  for (const ExecutionReport* r : sorted) {
    rows.BeginObject();
    rows.String("job_id", r->job_id);
    rows.Int("scheduled_for_ms", r->scheduled_for_ms);
    rows.Int("attempt", r->attempt);
    rows.String("status", ExecutionStatusName(r->status));
    rows.String("error", r->error);
    rows.OptionalInt("started_ms", r->started_at);
    rows.OptionalInt("finished_ms", r->finished_at);
    rows.String("worker", r->worker);
    rows.Int("src_partition", r->source.partition);
    rows.Int("src_offset", r->source.offset);
    rows.EndObject();
  }
  const std::vector<std::string> chunks = rows.Finish();

  Status st = session_.Run("apply execution reports", [&](pqxx::connection& conn) {
    result = ExecutionApplyResult{};
    pqxx::work txn(conn, "apply_execution_reports");
    // The new reports, as given (the message timestamp is not stored but dates a failure).
    std::vector<ExecutionReport> fresh;
    for (const std::string& chunk : chunks) {
      for (const pqxx::row& row : txn.exec_prepared(pg_queries::kInsertExecutionsName, chunk)) {
        ExecutionReport r;
        r.job_id = row[0].as<std::string>();
        r.scheduled_for_ms = row[1].as<int64_t>();
        r.attempt = row[2].as<int32_t>();
        r.status = StatusFromName(row[3].as<std::string>()).value_or(ExecutionStatus::kRunning);
        const auto given = std::lower_bound(
            sorted.begin(), sorted.end(), key(r), [&](const ExecutionReport* x, const auto& k) { return key(*x) < k; });
        if (given != sorted.end() && key(**given) == key(r)) fresh.push_back(**given);
      }
    }
    result.stored = static_cast<int64_t>(fresh.size());
    std::map<std::string, std::vector<ExecutionReport>> terminal;
    for (const ExecutionReport& r : fresh) {
      if (r.status != ExecutionStatus::kRunning) terminal[r.job_id].push_back(r);
    }
    std::map<std::string, std::optional<EpochMs>> latest_success;
    if (!terminal.empty()) {
      std::vector<std::string_view> terminal_ids;
      for (const auto& [id, unused] : terminal) terminal_ids.push_back(id);
      const std::string ids = ArrayLiteral(terminal_ids);
      std::map<std::string, JobStats> current;
      for (const pqxx::row& row : txn.exec_prepared(pg_queries::kLockJobStatsName, ids)) {
        JobStats s = StatsFromRow(row);
        current.emplace(s.job_id, std::move(s));
      }
      JsonArrayChunks upserts;
      for (auto& [id, reports_of_job] : terminal) {
        auto it = current.find(id);
        const JobStats s =
            FoldJobStats(it == current.end() ? std::nullopt : std::optional<JobStats>(it->second), id,
                         std::move(reports_of_job));
        latest_success[id] = s.last_success_scheduled_for_ms;
        upserts.BeginObject();
        upserts.String("job_id", s.job_id);
        upserts.String("last_status", s.last_status ? ExecutionStatusName(*s.last_status) : "");
        upserts.Int("last_scheduled_for_ms", s.last_scheduled_for_ms);
        upserts.Int("last_attempt", s.last_attempt);
        upserts.String("last_error", s.last_error);
        upserts.OptionalInt("last_finished_ms", s.last_finished_at);
        upserts.Int("consecutive_failures", s.consecutive_failures);
        upserts.Int("total_succeeded", s.total_succeeded);
        upserts.Int("total_failed", s.total_failed);
        upserts.OptionalInt("last_success_scheduled_for_ms", s.last_success_scheduled_for_ms);
        upserts.EndObject();
      }
      for (const std::string& chunk : upserts.Finish()) txn.exec_prepared(pg_queries::kUpsertJobStatsName, chunk);
      ApplyRetries(txn, fresh, latest_success, &result);
    }
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return result;
}

void PgExecutionStore::ApplyRetries(pqxx::work& txn, const std::vector<ExecutionReport>& fresh,
                                    const std::map<std::string, std::optional<EpochMs>>& latest_success,
                                    ExecutionApplyResult* result) {
  // Successes first: they drop the retries they supersede, and PlanRetries below sees them.
  JsonArrayChunks superseding;
  std::set<std::string_view> failed;
  for (const ExecutionReport& r : fresh) {
    if (r.status == ExecutionStatus::kFailed) failed.insert(r.job_id);
  }
  for (const auto& [id, slot] : latest_success) {
    if (!slot) continue;
    superseding.BeginObject();
    superseding.String("job_id", id);
    superseding.Int("scheduled_for_ms", *slot);
    superseding.EndObject();
  }
  for (const std::string& chunk : superseding.Finish()) {
    result->retries_superseded += txn.exec_prepared(pg_queries::kSupersedeRetriesName, chunk).affected_rows();
  }
  if (failed.empty()) return;

  std::map<std::string, RetryTarget> targets;
  for (const pqxx::row& row : txn.exec_prepared(pg_queries::kRetryTargetsName, ArrayLiteral(failed))) {
    RetryTarget t;
    t.id = row[0].as<std::string>();
    t.shard = row[1].as<int32_t>();
    t.owner = row[2].as<std::string>();
    t.topic = row[3].as<std::string>();
    t.key = row[4].as<std::string>();
    if (t.key.empty()) t.key = t.id;
    t.details_json = row[5].as<std::string>();
    t.interval_minutes = row[6].as<int32_t>();
    t.priority = row[7].as<int32_t>();
    t.max_retries = row[8].as<int32_t>();
    t.backoff.initial_ms = row[9].as<int64_t>();
    t.backoff.multiplier = row[10].as<double>();
    t.backoff.max_ms = row[11].as<int64_t>();
    targets.emplace(t.id, std::move(t));
  }
  if (targets.empty()) return;
  const RetryPlanning planning = PlanRetries(fresh, targets, latest_success, retry_rules_, clock_.NowMs());
  result->retries_too_late += planning.too_late;
  if (planning.retries.empty()) return;

  std::set<int32_t> shards;
  JsonArrayChunks retries;
  for (const ScheduledRetry& s : planning.retries) {
    shards.insert(s.target->shard);
    retries.BeginObject();
    retries.String("id", s.row_id);
    retries.Int("shard", s.target->shard);
    retries.Int("interval_minutes", s.target->interval_minutes);
    retries.String("owner", s.target->owner);
    retries.String("topic", s.target->topic);
    retries.String("key", s.target->key);
    retries.String("details", s.target->details_json);
    retries.Int("priority", s.target->priority);
    retries.Int("run_at_ms", s.run_at_ms);
    retries.Int("run_minute", s.run_minute);
    retries.Int("scheduled_for_ms", s.scheduled_for_ms);
    retries.Int("attempt", s.attempt);
    retries.String("retry_of", s.target->id);
    retries.EndObject();
  }
  txn.exec_prepared(pg_queries::kLockShardStatesName, ArrayLiteral(shards));  // sorted: a fixed lock order
  for (const std::string& chunk : retries.Finish()) {
    result->retries_scheduled += txn.exec_prepared(pg_queries::kInsertRetriesName, chunk).affected_rows();
  }
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
