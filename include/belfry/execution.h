// Execution outcomes: what consumer services report on the executions topic, as ingested and
// as read back. See docs/executions.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/clock.h"
#include "belfry/job.h"
#include "belfry/status.h"

namespace belfry {

enum class ExecutionStatus { kSucceeded, kFailed, kRunning };

// "succeeded", "failed", "running".
const char* ExecutionStatusName(ExecutionStatus s);

// One validated report: {"jobId","scheduledFor","status","error","startedAt","finishedAt",
// "worker","attempt"}. (job_id, scheduled_for_ms, attempt, status) identifies it: a repeat of the
// same report changes nothing.
struct ExecutionReport {
  std::string job_id;
  EpochMs scheduled_for_ms = 0;
  int32_t attempt = 0;  // 0 = the original trigger; n = the n-th retry
  ExecutionStatus status = ExecutionStatus::kSucceeded;
  std::string error;  // empty = none
  std::optional<EpochMs> started_at;
  std::optional<EpochMs> finished_at;
  std::string worker;  // empty = not given
  SourcePosition source;
};

// A stored report, as the history returns it.
struct ExecutionRecord {
  ExecutionReport report;
  EpochMs received_at = 0;
};

// Per-job counters over terminal reports (succeeded, failed); "running" reports only enter the
// history. The last outcome is the terminal report with the greatest (scheduledFor, attempt).
struct JobStats {
  std::string job_id;
  std::optional<ExecutionStatus> last_status;
  EpochMs last_scheduled_for_ms = 0;
  int32_t last_attempt = 0;
  std::string last_error;
  std::optional<EpochMs> last_finished_at;
  int64_t consecutive_failures = 0;
  int64_t total_succeeded = 0;
  int64_t total_failed = 0;
  // The latest slot the job succeeded for (any attempt): retries of it or older slots are moot.
  std::optional<EpochMs> last_success_scheduled_for_ms;
};

// What one ApplyReports call did.
struct ExecutionApplyResult {
  int64_t stored = 0;              // new reports (repeats excluded)
  int64_t retries_scheduled = 0;   // retry rows inserted
  int64_t retries_superseded = 0;  // scheduled retries dropped by a newer success
  int64_t retries_too_late = 0;    // retries not scheduled: due more than max_catchup ago
};

// A page of history, newest first: (scheduledFor, attempt, status) descending.
// What one sweep of the execution history's daily partitions did (docs/executions.md, "History").
struct PartitionSweep {
  int32_t created = 0;
  int32_t dropped = 0;
  int64_t default_rows_deleted = 0;  // expired reports that had landed outside the daily partitions
};

struct ExecutionPage {
  std::vector<ExecutionRecord> records;
  std::string next_cursor;  // empty = no more
};

class ExecutionStore {
 public:
  virtual ~ExecutionStore() = default;
  // Stores the reports in one transaction: new ones enter the history and the counters; a
  // report already stored (same key) changes nothing. Idempotent under replay.
  // A new `failed` report of a job that allows retries schedules the next attempt (see
  // docs/executions.md, "Retries"); a new `succeeded` one drops the job's retries of that slot and
  // older ones.
  virtual StatusOr<ExecutionApplyResult> ApplyReports(const std::vector<ExecutionReport>& reports) = 0;
  // cursor: empty for the first page, else a next_cursor from the previous page. Invalid for a
  // malformed cursor. limit is clamped to 1..1000.
  virtual StatusOr<ExecutionPage> ListExecutions(const std::string& job_id, int32_t limit,
                                                 const std::string& cursor) = 0;
  virtual StatusOr<std::optional<JobStats>> GetJobStats(const std::string& job_id) = 0;
};

}  // namespace belfry
