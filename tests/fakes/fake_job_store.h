// FakeJobStore: an in-memory JobStore with the due rule of design.md, for unit tests. Calls it does
// not model fail with FailedPrecondition (UnsupportedJobStore).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

#include "belfry/job_store.h"
#include "fakes/unsupported_job_store.h"

namespace belfry {

class FakeJobStore final : public UnsupportedJobStore {
 public:
  struct Row {
    JobSpec spec;
    bool paused = false;
    SourcePosition source;
  };

  Status ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) override;
  Status ApplyActions(const std::vector<JobAction>& actions) override;
  StatusOr<std::optional<StoredJob>> GetJob(const std::string& id) override;
  StatusOr<std::optional<JobAndStats>> GetJobAndStats(const std::string& id) override {
    return JobWithoutStats(GetJob(id));
  }
  StatusOr<JobPage> ListJobs(const JobListFilter& filter) override;
  // The groups SetLoadGroups gave, whatever the query; FailedPrecondition (as the base) before.
  // Calls `during_load_read` (if set; outside the store's lock) first: a test holds a read there.
  StatusOr<LoadGroups> ReadLoadGroups(const LoadGroupQuery&) override {
    if (during_load_read) during_load_read();
    std::lock_guard<std::mutex> lock(mu_);
    if (!load_groups_) return Status::FailedPrecondition("this job store cannot project load");
    return *load_groups_;
  }
  void SetLoadGroups(LoadGroups groups) {
    std::lock_guard<std::mutex> lock(mu_);
    load_groups_ = std::move(groups);
  }
  std::function<void()> during_load_read;  // set before the reads start

  // Bulk operations as the real store runs them (docs/bulk-operations.md), over the rows in
  // (shard, id) order: pause, resume and delete change the rows; a trigger only counts its jobs
  // (the fake keeps no manual rows). A step visits at most 8 shards, like PgJobStore's.
  StatusOr<std::vector<Status>> AcceptBulkOps(const std::vector<BulkOp>& ops) override;
  StatusOr<std::optional<BulkOpState>> RunBulkStep(int32_t max_jobs, EpochMs now) override;
  StatusOr<std::vector<BulkOpState>> UnpublishedBulkOps(int32_t limit) override;
  Status MarkBulkOpPublished(const std::string& id, EpochMs now) override;
  StatusOr<std::optional<BulkOpState>> GetBulkOp(const std::string& id) override;
  StatusOr<std::vector<BulkOpState>> ListBulkOps(int32_t limit) override;

  // The audit trail over changes the test adds (the fake's own writes record none).
  StatusOr<std::vector<JobChange>> ListJobChanges(const std::string& job_id, int64_t before_change_id,
                                                  int32_t limit) override;
  StatusOr<int64_t> PublishChanges(int32_t limit,
                                   const std::function<Status(const std::vector<JobChange>&)>& publish) override;

  // Test controls.
  // Stores `change` under the next change_id (from 1), unpublished; returns the id.
  int64_t AddChange(JobChange change);
  int64_t published_changes() const;
  void Put(const JobSpec& spec, bool paused = false);
  void FailNextQueries(int n) { fail_queries_ = n; }
  // The next `pass` queries succeed, then the next `n` fail.
  void FailQueriesAfter(int pass, int n) {
    pass_queries_ = pass;
    fail_queries_ = n;
  }
  std::map<std::string, Row> rows() const;
  int queries() const { return queries_; }
  // The read fence of every due query, in order.
  std::vector<int64_t> read_fences() const {
    std::lock_guard<std::mutex> lock(mu_);
    return read_fences_;
  }

  Status RecordDeliveryError(const DeliveryErrorRecord& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_delivery_errors_ > 0) {
      --fail_delivery_errors_;
      return Status::Retryable("injected store failure");
    }
    delivery_errors_[e.job_id] = e;
    return Status::Ok();
  }
  // The next n RecordDeliveryError calls fail (retryable) and record nothing.
  void FailDeliveryErrors(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_delivery_errors_ = n;
  }
  std::map<std::string, DeliveryErrorRecord> delivery_errors() const {
    std::lock_guard<std::mutex> lock(mu_);
    return delivery_errors_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, DeliveryErrorRecord> delivery_errors_;
  int fail_delivery_errors_ = 0;
  std::optional<LoadGroups> load_groups_;
  std::map<std::string, Row> rows_;
  std::vector<BulkOpState> bulk_ops_;  // in acceptance order
  std::vector<std::pair<JobChange, bool>> changes_;  // in change_id order; bool: published
  int fail_queries_ = 0;
  int pass_queries_ = 0;
  int queries_ = 0;
  std::vector<int64_t> read_fences_;
};

}  // namespace belfry
