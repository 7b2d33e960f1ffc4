// JobReader: what the admin API and the CLI read about jobs: one job, a page of jobs, a job's
// audit trail, bulk operations, and a backfill's dry run. Read-only; never on the trigger path.
// Implemented by PgJobStore (src/pg/pg_job_store_reads.cc, pg_job_store_changes.cc,
// pg_job_store_bulk.cc, pg_job_store_manual_fires.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "belfry/bulk_op.h"
#include "belfry/command.h"
#include "belfry/execution.h"
#include "belfry/job.h"
#include "belfry/job_change.h"
#include "belfry/status.h"
#include "belfry/trigger_path_store.h"

namespace belfry {

struct JobListFilter {
  std::string owner;   // empty = any
  std::string topic;   // empty = any
  std::string labels;  // a canonical label object (core/job_labels.h) the job's must contain; empty = any
  std::string id_prefix;  // only ids that start with this; empty = any
  std::string after_id;  // keyset cursor: ids strictly greater than this
  int32_t limit = 100;   // jobs per page, 1..kMaxJobPage (clamped)
};

constexpr int32_t kMaxJobPage = 1000;

// One page of ListJobs, in id order.
struct JobPage {
  std::vector<StoredJob> jobs;
  // When more jobs match: the last id shown (the next page's after_id). Empty on the last page.
  std::string next_after_id;
};

// The one pagination rule: a store reads limit + 1 rows; the extra row only says that another
// page exists. `rows` are those (at most limit + 1) rows, in id order.
inline JobPage JobPageOf(std::vector<StoredJob> rows, int32_t limit) {
  JobPage page;
  if (static_cast<int64_t>(rows.size()) > limit) {
    rows.resize(static_cast<size_t>(limit));
    page.next_after_id = rows.back().spec.id;
  }
  page.jobs = std::move(rows);
  return page;
}

// A job and what its execution reports say, read together (the admin API's job view).
struct JobAndStats {
  StoredJob job;
  // False when the store keeps no execution outcomes (the reader then asks the ExecutionStore).
  bool stats_read = false;
  std::optional<JobStats> stats;  // when stats_read: nullopt until the job's first report
  std::optional<DeliveryErrorRecord> last_delivery_error;  // none until a trigger is refused
};

// GetJobAndStats of a store that keeps no outcome counters: the job, with stats_read false.
inline StatusOr<std::optional<JobAndStats>> JobWithoutStats(StatusOr<std::optional<StoredJob>> job) {
  if (!job.ok()) return job.status();
  if (!job->has_value()) return std::optional<JobAndStats>();
  return std::optional<JobAndStats>(JobAndStats{std::move(**job), false, std::nullopt, std::nullopt});
}

class JobReader {
 public:
  virtual ~JobReader() = default;

  virtual StatusOr<std::optional<StoredJob>> GetJob(const std::string& id) = 0;
  // The job and, where the store keeps them next to the jobs, its outcome counters, in one read.
  // A store that keeps no counters answers JobWithoutStats(GetJob(id)).
  virtual StatusOr<std::optional<JobAndStats>> GetJobAndStats(const std::string& id) = 0;
  // Up to filter.limit (clamped to 1..kMaxJobPage) matching jobs after filter.after_id, and
  // whether more follow (JobPageOf).
  virtual StatusOr<JobPage> ListJobs(const JobListFilter& filter) = 0;

  // Job `job_id`'s changes (docs/audit-trail.md), newest first: at most `limit` (clamped to
  // 1..1000) whose change_id is below `before_change_id` (0: from the newest), as whole views.
  // Kept until the retention sweep.
  virtual StatusOr<std::vector<JobChange>> ListJobChanges(const std::string& job_id, int64_t before_change_id,
                                                          int32_t limit) = 0;

  // One bulk operation (nullopt when unknown), and the most recently accepted ones.
  virtual StatusOr<std::optional<BulkOpState>> GetBulkOp(const std::string& id) = 0;
  virtual StatusOr<std::vector<BulkOpState>> ListBulkOps(int32_t limit) = 0;

  // A backfill's dry run on a read: what CommandStore::ApplyManualFires would store for `fire` at
  // fire.source.timestamp_ms (NotFound when there is no such job).
  virtual StatusOr<ManualFireResult> CountBackfill(const ManualFire& fire) = 0;
};

}  // namespace belfry
