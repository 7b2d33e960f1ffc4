// PgSweepStore: the SweepStore over PostgreSQL, a thin adapter over a PgJobStore and a
// PgExecutionStore of its own (their connections open on first use, on the sweeping thread).
#pragma once

#include <string>

#include "app/sweep_store.h"
#include "core/retry_planner.h"
#include "pg/pg_execution_store.h"
#include "pg/pg_job_store.h"

namespace belfry {

class PgSweepStore final : public SweepStore {
 public:
  // The job store is built from `job_stores`, the execution store connects to `database_url`.
  // `clock` must outlive the store.
  PgSweepStore(const PgJobStoreOptions& job_stores, const std::string& database_url, RetryRules retry_rules,
               Clock& clock);
  PgSweepStore(const PgSweepStore&) = delete;
  PgSweepStore& operator=(const PgSweepStore&) = delete;

  StatusOr<int64_t> SweepOneShots(int64_t before_minute, int32_t max_rows) override;
  StatusOr<int64_t> SweepJobChanges(EpochMs before_ms, int32_t max_rows) override;
  StatusOr<PartitionSweep> MaintainExecutionPartitions(int64_t retention_ms, int32_t days_ahead) override;

 private:
  PgJobStore jobs_;
  PgExecutionStore executions_;
};

}  // namespace belfry
