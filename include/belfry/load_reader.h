// LoadReader: the full reads behind the load projection and a rebalance proposal
// (docs/load-projection.md). Each reads every job row once (seconds at millions of jobs): for
// operators, never for the trigger path. Called by the admin API, the CLI and ProposeRebalance
// (core/load_rebalance). Implemented by PgJobStore (src/pg/pg_job_store_load.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "belfry/load_group.h"
#include "belfry/status.h"

namespace belfry {

class LoadReader {
 public:
  virtual ~LoadReader() = default;

  // The groups a load projection needs (belfry/load_group.h), read in one snapshot.
  virtual StatusOr<LoadGroups> ReadLoadGroups(const LoadGroupQuery& query) = 0;
  // For a rebalance proposal (core/load_rebalance.h): every unpaused interval job, counted by
  // (interval, offset) and by whether its offset is pinned. One full read of jobs.
  virtual StatusOr<std::vector<OffsetLoad>> ReadOffsetLoads() = 0;
  // Up to `limit` ids (any of them) of unpaused interval jobs with this interval and offset whose
  // offset is not pinned: examples for a proposed move.
  virtual StatusOr<std::vector<std::string>> MovableJobIds(int32_t interval_minutes, int32_t offset_minutes,
                                                           int32_t limit) = 0;
};

}  // namespace belfry
