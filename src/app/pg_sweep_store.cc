#include "app/pg_sweep_store.h"

#include <utility>

namespace belfry {

PgSweepStore::PgSweepStore(const PgJobStoreOptions& job_stores, const std::string& database_url,
                           RetryRules retry_rules, Clock& clock)
    : jobs_(job_stores), executions_(database_url, std::move(retry_rules), clock) {}

StatusOr<int64_t> PgSweepStore::SweepOneShots(int64_t before_minute, int32_t max_rows) {
  return jobs_.SweepOneShots(before_minute, max_rows);
}

StatusOr<int64_t> PgSweepStore::SweepJobChanges(EpochMs before_ms, int32_t max_rows) {
  return jobs_.SweepJobChanges(before_ms, max_rows);
}

StatusOr<PartitionSweep> PgSweepStore::MaintainExecutionPartitions(int64_t retention_ms, int32_t days_ahead) {
  return executions_.MaintainPartitions(retention_ms, days_ahead);
}

}  // namespace belfry
