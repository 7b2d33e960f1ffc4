// SweepStore: exactly what the Sweeper needs of the database, so that it is unit-tested over a
// fake (tests/app/sweeper_test.cc) and PostgreSQL serves it through PgSweepStore.
#pragma once

#include <cstdint>

#include "belfry/clock.h"
#include "belfry/execution.h"  // PartitionSweep
#include "belfry/status.h"

namespace belfry {

// Thread-compatible: the Sweeper calls it from its one thread.
class SweepStore {
 public:
  virtual ~SweepStore() = default;

  // Deletes up to max_rows one-shots whose run_minute is before before_minute; returns how many
  // it deleted (PgJobStore::SweepOneShots).
  virtual StatusOr<int64_t> SweepOneShots(int64_t before_minute, int32_t max_rows) = 0;

  // Deletes up to max_rows published audit-trail changes older than before_ms; returns how many
  // it deleted (JobStore::SweepJobChanges).
  virtual StatusOr<int64_t> SweepJobChanges(EpochMs before_ms, int32_t max_rows) = 0;

  // Keeps the execution history's daily partitions: creates them through days_ahead days after
  // today, drops those wholly older than retention_ms (PgExecutionStore::MaintainPartitions).
  virtual StatusOr<PartitionSweep> MaintainExecutionPartitions(int64_t retention_ms, int32_t days_ahead) = 0;
};

}  // namespace belfry
