// BulkOpStore: how the bulk operations the command path accepted are walked and their outcomes
// published (docs/bulk-operations.md). Called by BulkOpRunner (src/app/bulk_op_runner).
// Implemented by PgJobStore (src/pg/pg_job_store_bulk.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/bulk_op.h"
#include "belfry/job.h"
#include "belfry/status.h"

namespace belfry {

class BulkOpStore {
 public:
  virtual ~BulkOpStore() = default;

  // One step of the oldest unfinished bulk operation no other node is stepping: at most
  // `max_jobs` jobs of one shard, from where the last step stopped, changed and the progress
  // recorded in one transaction (so a crash repeats no step). `now` is when paused jobs count as
  // paused, resumed limited jobs count from, and triggers are placed. nullopt when no operation
  // is unfinished; else its state after the step. Each changed job's change is recorded in the
  // audit trail in the same transaction.
  virtual StatusOr<std::optional<BulkOpState>> RunBulkStep(int32_t max_jobs, EpochMs now) = 0;
  // Finished operations whose outcome is not yet published, oldest first, at most `limit`.
  virtual StatusOr<std::vector<BulkOpState>> UnpublishedBulkOps(int32_t limit) = 0;
  virtual Status MarkBulkOpPublished(const std::string& id, EpochMs now) = 0;
};

}  // namespace belfry
