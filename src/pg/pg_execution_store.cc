#include "pg/pg_execution_store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/stream_to>
#include <pqxx/transaction>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/execution_report.h"
#include "core/json_writer.h"
#include "core/retry_planner.h"
#include "core/shard_layout.h"
#include "pg/array_literal.h"
#include "pg/copy_row.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_execution_queries.h"
#include "pg/pg_schema_queries.h"
#include "pg/pg_placing_shard_states.h"
#include "pg/pg_rows.h"

namespace belfry {
namespace {

std::vector<PreparedStatement> ExecutionStatements() {
  namespace q = pg_queries;
  return {
      {q::kExecutionStagesExistName, q::kExecutionStagesExistSql},
      {q::kLockJobStatsName, q::kLockJobStatsSql},
      {q::kLockJobStatsOfJobName, q::kLockJobStatsOfJobSql},
      {q::kGetJobStatsName, q::kGetJobStatsSql},
      {q::kListExecutionsName, q::kListExecutionsSql},
      {q::kListExecutionsAfterName, q::kListExecutionsAfterSql},
      {q::kMaintainExecutionPartitionsName, q::kMaintainExecutionPartitionsSql},
      {q::kRetryTargetsName, q::kRetryTargetsSql},
      {q::kLockLayoutSharedName, q::kLockLayoutSharedSql},
      {q::kReadLayoutAndNowName, q::kReadLayoutAndNowSql},
      {q::kLockPlacingShardStatesName, q::kLockPlacingShardStatesSql},
      {q::kLockPlacingShardStateName, q::kLockPlacingShardStateSql},
      {q::kInsertRetriesName, q::kInsertRetriesSql},
      {q::kSupersedeRetriesName, q::kSupersedeRetriesSql},
  };
}

using ExecutionStageRow = CopyRow<std::size(pg_queries::kExecutionStageColumns)>;
using JobStatsStageRow = CopyRow<std::size(pg_queries::kJobStatsStageColumns)>;

ExecutionStageRow StageRowOf(const ExecutionReport& r) {
  ExecutionStageRow row;
  size_t c = 0;  // kExecutionStageColumns order
  row.Set(c++, r.job_id);
  row.SetInt(c++, r.scheduled_for_ms);
  row.SetInt(c++, r.attempt);
  row.Set(c++, ExecutionStatusName(r.status));
  row.Set(c++, r.error);
  row.SetOptionalInt(c++, r.started_at);
  row.SetOptionalInt(c++, r.finished_at);
  row.Set(c++, r.worker);
  row.SetInt(c++, r.source.partition);
  row.SetInt(c++, r.source.offset);
  return row;
}

JobStatsStageRow StageRowOf(const JobStats& s) {
  JobStatsStageRow row;
  size_t c = 0;  // kJobStatsStageColumns order
  row.Set(c++, s.job_id);
  if (s.last_status) {
    row.Set(c++, ExecutionStatusName(*s.last_status));
  } else {
    row.SetNull(c++);
  }
  row.SetInt(c++, s.last_scheduled_for_ms);
  row.SetInt(c++, s.last_attempt);
  row.Set(c++, s.last_error);
  row.SetOptionalInt(c++, s.last_finished_at);
  row.SetInt(c++, s.consecutive_failures);
  row.SetInt(c++, s.total_succeeded);
  row.SetInt(c++, s.total_failed);
  row.SetOptionalInt(c++, s.last_success_scheduled_for_ms);
  return row;
}

// COPYs `rows` into the staging table `table` with columns `columns`.
template <typename Row, size_t N>
void Stage(pqxx::work& txn, const char* table, const char* const (&columns)[N],
           const std::vector<Row>& rows) {
  pqxx::stream_to stage(txn, table, std::vector<std::string>(std::begin(columns), std::end(columns)));
  for (const Row& row : rows) stage << row.Fields();
  stage.complete();
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
  return ExecutionStatusFromName(*status).has_value();
}

PgExecutionStore::PgExecutionStore(std::string database_url, RetryRules retry_rules, Clock& clock)
    : session_(std::move(database_url), ExecutionStatements()), retry_rules_(retry_rules), clock_(clock) {}

PgExecutionStore::~PgExecutionStore() = default;

StatusOr<ExecutionApplyResult> PgExecutionStore::ApplyReports(const std::vector<ExecutionReport>& reports) {
  ExecutionApplyResult result;
  if (reports.empty()) return result;
  // Sorted by key so that concurrent batches lock in the same order.
  std::vector<const ExecutionReport*> sorted;
  sorted.reserve(reports.size());
  for (const ExecutionReport& r : reports) sorted.push_back(&r);
  const auto key = [](const ExecutionReport& r) {
    return std::make_tuple(std::string_view(r.job_id), r.scheduled_for_ms, r.attempt,
                           static_cast<int>(r.status));
  };
  std::sort(sorted.begin(), sorted.end(),
            [&](const ExecutionReport* x, const ExecutionReport* y) { return key(*x) < key(*y); });
  std::vector<ExecutionStageRow> staged;
  staged.reserve(sorted.size());
  for (const ExecutionReport* r : sorted) staged.push_back(StageRowOf(*r));

  Status st = session_.Run("apply execution reports", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    result = ExecutionApplyResult{};
    // Registering is idempotent in libpqxx; each new connection prepares them on first use, by
    // which time this transaction has created the staging tables.
    conn.prepare(q::kInsertStagedExecutionsName, q::kInsertStagedExecutionsSql);
    conn.prepare(q::kUpsertStagedJobStatsName, q::kUpsertStagedJobStatsSql);
    pqxx::work txn(conn, "apply_execution_reports");
    if (!txn.exec_prepared(q::kExecutionStagesExistName)[0][0].as<bool>())
      txn.exec(q::kCreateExecutionStagesSql);
    Stage(txn, q::kExecutionStageTable, q::kExecutionStageColumns, staged);
    // The new reports, as given (the message timestamp is not stored but dates a failure).
    std::vector<ExecutionReport> fresh;
    for (const pqxx::row& row : txn.exec_prepared(q::kInsertStagedExecutionsName)) {
      const auto k = std::make_tuple(
          std::string_view(row[0].c_str(), row[0].size()), row[1].as<int64_t>(), row[2].as<int32_t>(),
          static_cast<int>(ExecutionStatusFromName(std::string_view(row[3].c_str(), row[3].size()))
                               .value_or(ExecutionStatus::kRunning)));
      const auto given =
          std::lower_bound(sorted.begin(), sorted.end(), k,
                           [&](const ExecutionReport* x, const auto& kk) { return key(*x) < kk; });
      if (given != sorted.end() && key(**given) == k) fresh.push_back(**given);
    }
    result.stored = static_cast<int64_t>(fresh.size());
    std::map<std::string, std::vector<ExecutionReport>> terminal;
    for (const ExecutionReport& r : fresh) {
      if (r.status != ExecutionStatus::kRunning) terminal[r.job_id].push_back(r);
    }
    if (!terminal.empty()) {
      std::map<std::string, JobStats> current;
      const auto add_rows = [&](const pqxx::result& rows) {
        for (const pqxx::row& row : rows) {
          JobStats s = JobStatsFromRow(row);
          current.emplace(s.job_id, std::move(s));
        }
      };
      if (session_.citus()) {
        // One job a statement, in id order (terminal's): Citus locks rows only in single-shard
        // statements, and job_stats is distributed by job_id.
        for (const auto& [id, unused] : terminal) add_rows(txn.exec_prepared(q::kLockJobStatsOfJobName, id));
      } else {
        std::vector<std::string_view> terminal_ids;
        terminal_ids.reserve(terminal.size());
        for (const auto& [id, unused] : terminal) terminal_ids.push_back(id);
        add_rows(txn.exec_prepared(q::kLockJobStatsName, ArrayLiteral(terminal_ids)));
      }
      // The latest success of each job that has ever failed: only such a job can have retries
      // to supersede (a retry row is written only in the transaction that counts its failure,
      // and counters are never reset).
      std::map<std::string, std::optional<EpochMs>> latest_success;
      std::vector<JobStatsStageRow> folded;
      folded.reserve(terminal.size());
      for (auto& [id, reports_of_job] : terminal) {
        auto it = current.find(id);
        const JobStats s =
            FoldJobStats(it == current.end() ? std::nullopt : std::optional<JobStats>(it->second), id,
                         std::move(reports_of_job));
        if (s.total_failed > 0) latest_success[id] = s.last_success_scheduled_for_ms;
        folded.push_back(StageRowOf(s));
      }
      Stage(txn, q::kJobStatsStageTable, q::kJobStatsStageColumns, folded);
      txn.exec_prepared(q::kUpsertStagedJobStatsName);
      if (!latest_success.empty()) ApplyRetries(txn, fresh, latest_success, &result);
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
  // The retries' minutes follow the database's shard layout, which a reshard changes under a
  // running node (docs/resharding.md); the config's is the rule when there is no record. The
  // retry rows are written under the layout lock, as every command transaction's.
  RetryRules rules = retry_rules_;
  txn.exec_prepared(pg_queries::kLockLayoutSharedName, pg_queries::kLayoutLockKey);
  const pqxx::row layout = txn.exec_prepared1(pg_queries::kReadLayoutAndNowName);
  if (!layout[0].is_null()) {
    if (StatusOr<ShardLayout> l = ParseShardLayout(layout[0].as<std::string>()); l.ok()) rules.layout = *l;
  }
  const std::string txn_now = layout[1].as<std::string>();
  const RetryPlanning planning = PlanRetries(fresh, targets, latest_success, rules, clock_.NowMs());
  result->retries_too_late += planning.too_late;
  if (planning.retries.empty()) return;

  std::set<int32_t> shards;
  for (const ScheduledRetry& s : planning.retries) {
    for (int32_t row : PlacingShardRows(rules.layout, s.target->shard)) shards.insert(row);
  }
  // Held until the commit: no firing can claim those shards between this read and the commit, so a
  // firing either is visible to the placement or sees the committed row.
  PlacingShardProgress next_minute;
  LockPlacingShardStates(txn, session_.citus(), txn_now, std::vector<int32_t>(shards.begin(), shards.end()),
                         &next_minute);
  const std::optional<int64_t> cutover_minute = PendingCutoverMinute(rules.layout);
  JsonArrayChunks retries;
  for (const ScheduledRetry& s : planning.retries) {
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
    retries.OptionalInt("placement_next_minute",
                        NextMinuteOf(next_minute, FiringShardRow(rules.layout, s.run_minute, s.target->shard)));
    retries.OptionalInt("cutover_minute", cutover_minute);
    retries.OptionalInt("stored_next_minute", cutover_minute ? NextMinuteOf(next_minute, s.target->shard) : std::nullopt);
    retries.EndObject();
  }
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
      e.status = ExecutionStatusFromName(row[3].as<std::string>()).value_or(ExecutionStatus::kRunning);
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
    if (!r.empty()) stats = JobStatsFromRow(r[0]);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return stats;
}

StatusOr<PartitionSweep> PgExecutionStore::MaintainPartitions(int64_t retention_ms, int32_t days_ahead) {
  PartitionSweep sweep;
  const int64_t now_ms = clock_.NowMs();
  Status st = session_.Run("maintain execution partitions", [&](pqxx::connection& conn) {
    pqxx::work txn(conn, "maintain_execution_partitions");
    const pqxx::row row =
        txn.exec_prepared1(pg_queries::kMaintainExecutionPartitionsName, now_ms, retention_ms, days_ahead);
    sweep.created = row[0].as<int32_t>();
    sweep.dropped = row[1].as<int32_t>();
    sweep.default_rows_deleted = row[2].as<int64_t>();
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return sweep;
}

}  // namespace belfry
