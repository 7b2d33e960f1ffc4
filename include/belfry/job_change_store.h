// JobChangeStore: the audit trail's way out (docs/audit-trail.md): publishing the recorded changes
// to `belfry.changes`, and their retention. The command path, manual fires and bulk steps record
// the changes (CommandStore, BulkOpStore); readers page them through JobReader::ListJobChanges.
// Called by ChangePublisher and the background sweeps. Implemented by PgJobStore
// (src/pg/pg_job_store_changes.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "belfry/job.h"
#include "belfry/job_change.h"
#include "belfry/status.h"

namespace belfry {

class JobChangeStore {
 public:
  virtual ~JobChangeStore() = default;

  // One cluster-wide publisher at a time: hands the oldest unpublished changes (at most `limit`,
  // in change_id order) to `publish`, and marks them published iff it returns Ok. Returns how
  // many it marked: 0 when none waits, or while another node publishes.
  virtual StatusOr<int64_t> PublishChanges(int32_t limit,
                                           const std::function<Status(const std::vector<JobChange>&)>& publish) = 0;
  // Deletes up to `max_rows` published changes made before `before_ms`; returns how many.
  virtual StatusOr<int64_t> SweepJobChanges(EpochMs before_ms, int32_t max_rows) = 0;
};

}  // namespace belfry
