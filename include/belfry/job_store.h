// JobStore: where jobs live. Implemented by PgJobStore (src/pg) and by FakeJobStore (tests/fakes).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "belfry/bulk_op.h"
#include "belfry/command.h"
#include "belfry/execution.h"
#include "belfry/job.h"
#include "belfry/job_change.h"
#include "belfry/load_group.h"
#include "belfry/status.h"

namespace belfry {

// One term of the tick query: jobs with this interval whose offset is one of `offsets`.
struct PhaseTerm {
  int32_t interval_minutes = 0;
  std::vector<int32_t> offsets;
};

// A set-based due-jobs query for one shard.
//
// Normal firing: terms hold one offset per interval (minute mod interval), first_minute ==
// last_minute == the minute being fired.
// Coalesced catch-up: terms hold every offset due in [first_minute, last_minute]; each job is
// returned once, with due_minute = its latest due minute in the range.
struct DueQuery {
  int32_t shard = 0;
  int64_t first_minute = 0;
  int64_t last_minute = 0;
  int64_t tick_ms = 500;  // slot(M, s) = M*60000 + s*tick_ms; start/end are checked at the slot
  std::vector<PhaseTerm> terms;
  // The claim's read fence (ShardClaim::read_fence): a store that reads from a replica reads
  // there only once the replica has replayed past it. 0: no fence, read from the primary.
  int64_t read_fence = 0;
  // The stored shards (partitions) the query reads (StoredShardsOf, core/shard_layout.h): empty
  // means {shard}; during a reshard an old-layout shard reads every partition it splits into.
  std::vector<int32_t> stored_shards;
};

struct JobListFilter {
  std::string owner;   // empty = any
  std::string topic;   // empty = any
  std::string labels;  // a canonical label object (core/job_labels.h) the job's must contain; empty = any
  std::string after_id;  // keyset cursor: ids strictly greater than this
  int32_t limit = 100;   // jobs per page, 1..kMaxJobPage (clamped)
};

// The last trigger of a job that the broker refused for good (docs/reliability.md,
// "Undeliverable triggers"). Written only when that happens, never on the firing path.
struct DeliveryErrorRecord {
  std::string job_id;
  std::string topic;  // the job's topic the trigger was refused by
  EpochMs slot_ms = 0;
  std::string error;
  EpochMs at_ms = 0;  // when the refusal was recorded
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

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Records `e` as its job's last delivery error, replacing the one before. Idempotent.
  // Retryable on connection faults. The default records nothing (a store without the table).
  virtual Status RecordDeliveryError(const DeliveryErrorRecord& e) {
    (void)e;
    return Status::Ok();
  }

  // Streams every due job for `q` into `fn`, without holding the whole result in memory.
  // Read-only. Returns Retryable on connection faults (fn may have been called for a prefix).
  virtual Status ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) = 0;

  // Applies the actions in one transaction, all or nothing. Idempotent under replay: an action
  // whose source position is at or before the stored row's (same partition) changes nothing.
  virtual Status ApplyActions(const std::vector<JobAction>& actions) = 0;

  // Applies trigger and backfill commands (docs/manual-fires.md) in one transaction, after the
  // ApplyActions of their batch: each stores one-shot rows derived from the job as stored. One
  // result per fire, in order; a fire that cannot apply to the job (none, a one-shot, too many
  // slots) gets a non-Ok status and stores nothing, without failing the others. Idempotent
  // under replay: a trigger's row id is a function of its command, and a backfill records its
  // range, so a replayed or repeated backfill stores only slots no earlier one covered.
  // The default: every fire fails with FailedPrecondition (a store without manual fires).
  virtual StatusOr<std::vector<ManualFireResult>> ApplyManualFires(const std::vector<ManualFire>& fires) {
    return std::vector<ManualFireResult>(
        fires.size(), ManualFireResult{Status::FailedPrecondition("this job store cannot fire jobs by hand"), 0, 0});
  }

  // A backfill's dry run on a read: what ApplyManualFires would store for `fire` at
  // fire.source.timestamp_ms (NotFound when there is no such job). Read-only.
  virtual StatusOr<ManualFireResult> CountBackfill(const ManualFire& fire) {
    (void)fire;
    return Status::FailedPrecondition("this job store cannot fire jobs by hand");
  }

  // ---- Bulk operations (docs/bulk-operations.md). The defaults: FailedPrecondition. ----------

  // Records bulk commands (after the ApplyManualFires of their batch), in one transaction; none
  // changes a job here. One status per op: Ok when it is recorded, or was already recorded from
  // the same source position (a replay); Invalid (duplicate_bulk_id) when another command already
  // used its id.
  virtual StatusOr<std::vector<Status>> AcceptBulkOps(const std::vector<BulkOp>& ops) {
    return std::vector<Status>(ops.size(), Status::FailedPrecondition("this job store cannot run bulk operations"));
  }
  // One step of the oldest unfinished bulk operation no other node is stepping: at most
  // `max_jobs` jobs of one shard, from where the last step stopped, changed and the progress
  // recorded in one transaction (so a crash repeats no step). `now` is when paused jobs count as
  // paused, resumed limited jobs count from, and triggers are placed. nullopt when no operation
  // is unfinished; else its state after the step.
  virtual StatusOr<std::optional<BulkOpState>> RunBulkStep(int32_t max_jobs, EpochMs now) {
    (void)max_jobs;
    (void)now;
    return Status::FailedPrecondition("this job store cannot run bulk operations");
  }
  // Finished operations whose outcome is not yet published, oldest first, at most `limit`.
  virtual StatusOr<std::vector<BulkOpState>> UnpublishedBulkOps(int32_t limit) {
    (void)limit;
    return Status::FailedPrecondition("this job store cannot run bulk operations");
  }
  virtual Status MarkBulkOpPublished(const std::string& id, EpochMs now) {
    (void)id;
    (void)now;
    return Status::FailedPrecondition("this job store cannot run bulk operations");
  }
  // One operation (nullopt when unknown), and the most recently accepted ones.
  virtual StatusOr<std::optional<BulkOpState>> GetBulkOp(const std::string& id) {
    (void)id;
    return Status::FailedPrecondition("this job store cannot run bulk operations");
  }
  virtual StatusOr<std::vector<BulkOpState>> ListBulkOps(int32_t limit) {
    (void)limit;
    return Status::FailedPrecondition("this job store cannot run bulk operations");
  }

  // ---- The audit trail (docs/audit-trail.md). The defaults: FailedPrecondition. --------------
  // ApplyActions, ApplyManualFires and RunBulkStep record a JobChange for each job they change,
  // in their own transaction.

  // Job `job_id`'s changes, newest first: at most `limit` (clamped to 1..1000) whose change_id
  // is below `before_change_id` (0: from the newest). Kept until the retention sweep.
  virtual StatusOr<std::vector<JobChange>> ListJobChanges(const std::string& job_id, int64_t before_change_id,
                                                          int32_t limit) {
    (void)job_id;
    (void)before_change_id;
    (void)limit;
    return Status::FailedPrecondition("this job store keeps no change history");
  }
  // One cluster-wide publisher at a time: hands the oldest unpublished changes (at most `limit`,
  // in change_id order) to `publish`, and marks them published iff it returns Ok. Returns how
  // many it marked: 0 when none waits, or while another node publishes.
  virtual StatusOr<int64_t> PublishChanges(int32_t limit,
                                           const std::function<Status(const std::vector<JobChange>&)>& publish) {
    (void)limit;
    (void)publish;
    return Status::FailedPrecondition("this job store keeps no change history");
  }
  // Deletes up to `max_rows` published changes made before `before_ms`; returns how many.
  virtual StatusOr<int64_t> SweepJobChanges(EpochMs before_ms, int32_t max_rows) {
    (void)before_ms;
    (void)max_rows;
    return Status::FailedPrecondition("this job store keeps no change history");
  }

  virtual StatusOr<std::optional<StoredJob>> GetJob(const std::string& id) = 0;
  // The job and, where the store keeps them next to the jobs, its outcome counters, in one read.
  // The default reads GetJob and leaves stats_read false.
  virtual StatusOr<std::optional<JobAndStats>> GetJobAndStats(const std::string& id) {
    StatusOr<std::optional<StoredJob>> job = GetJob(id);
    if (!job.ok()) return job.status();
    if (!job->has_value()) return std::optional<JobAndStats>();
    return std::optional<JobAndStats>(JobAndStats{std::move(**job), false, std::nullopt, std::nullopt});
  }
  // Up to filter.limit (clamped to 1..kMaxJobPage) matching jobs after filter.after_id, and
  // whether more follow (JobPageOf).
  virtual StatusOr<JobPage> ListJobs(const JobListFilter& filter) = 0;

  // The groups a load projection needs (belfry/load_group.h), read in one snapshot. Read-only;
  // reads every job row once (a full scan: seconds at millions of jobs), so it is for operators,
  // never for the trigger path. The default: FailedPrecondition.
  virtual StatusOr<LoadGroups> ReadLoadGroups(const LoadGroupQuery& query) {
    (void)query;
    return Status::FailedPrecondition("this job store cannot project load");
  }
  // For a rebalance proposal (core/load_rebalance.h): every unpaused interval job, counted by
  // (interval, offset) and by whether its offset is pinned. Read-only, one full read of jobs.
  virtual StatusOr<std::vector<OffsetLoad>> ReadOffsetLoads() {
    return Status::FailedPrecondition("this job store cannot propose a rebalance");
  }
  // Up to `limit` ids (any of them) of unpaused interval jobs with this interval and offset whose
  // offset is not pinned: examples for a proposed move.
  virtual StatusOr<std::vector<std::string>> MovableJobIds(int32_t interval_minutes, int32_t offset_minutes,
                                                           int32_t limit) {
    (void)interval_minutes;
    (void)offset_minutes;
    (void)limit;
    return Status::FailedPrecondition("this job store cannot propose a rebalance");
  }
};

}  // namespace belfry
