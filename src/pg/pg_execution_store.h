// PgExecutionStore: the ExecutionStore over PostgreSQL (tables executions and job_stats,
// migrations/0003_executions.sql; reasoning in docs/executions.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

#include "belfry/clock.h"
#include "belfry/execution.h"
#include "core/retry_planner.h"
#include "pg/pg_session.h"

namespace belfry {

// Thread-compatible: one instance per thread. One libpqxx connection, opened on first use.
class PgExecutionStore final : public ExecutionStore {
 public:
  // `clock` (which must outlive the store) dates the failures of reports without finishedAt and
  // decides which retries are too late to schedule.
  PgExecutionStore(std::string database_url, RetryRules retry_rules, Clock& clock);
  PgExecutionStore(const PgExecutionStore&) = delete;
  PgExecutionStore& operator=(const PgExecutionStore&) = delete;
  ~PgExecutionStore() override;

  // One transaction, a fixed number of set-based statements whatever the batch size: COPY the
  // reports into a staging table and insert them (ON CONFLICT DO NOTHING RETURNING the new ones),
  // lock the touched job_stats rows, fold the new reports into them (FoldJobStats), COPY and
  // upsert the rows; then, for jobs that have ever failed, drop the retries new successes
  // supersede, and schedule the retries new failures call for (PlanRetries).
  StatusOr<ExecutionApplyResult> ApplyReports(const std::vector<ExecutionReport>& reports) override;
  StatusOr<ExecutionPage> ListExecutions(const std::string& job_id, int32_t limit,
                                         const std::string& cursor) override;
  StatusOr<std::optional<JobStats>> GetJobStats(const std::string& job_id) override;

  // The history sweep: creates the daily partitions of `executions` from the oldest day still
  // within `retention_ms` of the clock's now through `days_ahead` days after today, and drops
  // the partitions wholly older than now - retention_ms (docs/executions.md, "History").
  // Idempotent; concurrent sweeps of several nodes take turns (an advisory lock).
  StatusOr<PartitionSweep> MaintainPartitions(int64_t retention_ms, int32_t days_ahead);

 private:
  // Inside ApplyReports' transaction: the retry part.
  void ApplyRetries(pqxx::work& txn, const std::vector<ExecutionReport>& fresh,
                    const std::map<std::string, std::optional<EpochMs>>& latest_success,
                    ExecutionApplyResult* result);

  PgSession session_;
  RetryRules retry_rules_;
  Clock& clock_;
};

// The history cursor "<scheduledFor ms>.<attempt>.<status>" of a record, and its parse.
std::string ExecutionCursor(const ExecutionReport& r);
bool ParseExecutionCursor(const std::string& cursor, int64_t* scheduled_for_ms, int32_t* attempt,
                          std::string* status);

}  // namespace belfry
