// UnsupportedJobStore: a JobStore (every role of include/belfry/job_store.h) whose every call
// fails with FailedPrecondition, for test doubles that script a few calls and override only those.
// The production interfaces have no such defaults: a real store implements each role it offers.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "belfry/job_store.h"

namespace belfry {

class UnsupportedJobStore : public JobStore {
 public:
  Status ForEachDueJob(const DueQuery&, const std::function<void(const DueJob&)>&) override { return Unsupported(); }
  Status RecordDeliveryError(const DeliveryErrorRecord&) override { return Unsupported(); }

  Status ApplyActions(const std::vector<JobAction>&) override { return Unsupported(); }
  StatusOr<std::vector<ManualFireResult>> ApplyManualFires(const std::vector<ManualFire>& fires) override {
    return std::vector<ManualFireResult>(fires.size(), ManualFireResult{Unsupported(), 0, 0});
  }
  StatusOr<std::vector<Status>> AcceptBulkOps(const std::vector<BulkOp>& ops) override {
    return std::vector<Status>(ops.size(), Unsupported());
  }

  StatusOr<std::optional<BulkOpState>> RunBulkStep(int32_t, EpochMs) override { return Unsupported(); }
  StatusOr<std::vector<BulkOpState>> UnpublishedBulkOps(int32_t) override { return Unsupported(); }
  Status MarkBulkOpPublished(const std::string&, EpochMs) override { return Unsupported(); }

  StatusOr<int64_t> PublishChanges(int32_t, const std::function<Status(const std::vector<JobChange>&)>&) override {
    return Unsupported();
  }
  StatusOr<int64_t> SweepJobChanges(EpochMs, int32_t) override { return Unsupported(); }

  StatusOr<std::optional<StoredJob>> GetJob(const std::string&) override { return Unsupported(); }
  StatusOr<std::optional<JobAndStats>> GetJobAndStats(const std::string&) override { return Unsupported(); }
  StatusOr<JobPage> ListJobs(const JobListFilter&) override { return Unsupported(); }
  StatusOr<std::vector<JobChange>> ListJobChanges(const std::string&, int64_t, int32_t) override {
    return Unsupported();
  }
  StatusOr<std::optional<BulkOpState>> GetBulkOp(const std::string&) override { return Unsupported(); }
  StatusOr<std::vector<BulkOpState>> ListBulkOps(int32_t) override { return Unsupported(); }
  StatusOr<ManualFireResult> CountBackfill(const ManualFire&) override { return Unsupported(); }

  StatusOr<LoadGroups> ReadLoadGroups(const LoadGroupQuery&) override { return Unsupported(); }
  StatusOr<std::vector<OffsetLoad>> ReadOffsetLoads() override { return Unsupported(); }
  StatusOr<std::vector<std::string>> MovableJobIds(int32_t, int32_t, int32_t) override { return Unsupported(); }

 private:
  static Status Unsupported() { return Status::FailedPrecondition("this test store does not support that call"); }
};

}  // namespace belfry
