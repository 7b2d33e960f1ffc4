// PgExecutionStore: the ExecutionStore over PostgreSQL (tables executions and job_stats,
// migrations/0003_executions.sql; reasoning in docs/executions.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/execution.h"
#include "pg/pg_session.h"

namespace belfry {

// Thread-compatible: one instance per thread. One libpqxx connection, opened on first use.
class PgExecutionStore final : public ExecutionStore {
 public:
  explicit PgExecutionStore(std::string database_url);
  PgExecutionStore(const PgExecutionStore&) = delete;
  PgExecutionStore& operator=(const PgExecutionStore&) = delete;
  ~PgExecutionStore() override;

  // One transaction, four set-based statements whatever the batch size: insert the reports
  // (ON CONFLICT DO NOTHING RETURNING the new ones), lock the touched job_stats rows, fold the new
  // reports into them (FoldJobStats), upsert the rows.
  Status ApplyReports(const std::vector<ExecutionReport>& reports) override;
  StatusOr<ExecutionPage> ListExecutions(const std::string& job_id, int32_t limit,
                                         const std::string& cursor) override;
  StatusOr<std::optional<JobStats>> GetJobStats(const std::string& job_id) override;

  // The trim sweep: deletes all but the newest keep_per_job reports of every job. Returns the count.
  StatusOr<int64_t> TrimHistory(int32_t keep_per_job);

 private:
  PgSession session_;
};

// The history cursor "<scheduledFor ms>.<attempt>.<status>" of a record, and its parse.
std::string ExecutionCursor(const ExecutionReport& r);
bool ParseExecutionCursor(const std::string& cursor, int64_t* scheduled_for_ms, int32_t* attempt,
                          std::string* status);

}  // namespace belfry
