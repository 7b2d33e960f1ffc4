// Bulk operations: pause, resume, delete or trigger every job a selector matches (an owner and/or
// labels), applied off the command partition in bounded steps. See docs/bulk-operations.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "belfry/job.h"
#include "belfry/status.h"

namespace belfry {

enum class CommandOp;

// Which jobs a bulk operation acts on: those with this owner (when set) whose labels contain
// `labels_json` (a canonical label object, core/job_labels.h; empty = any). At least one is set.
// Derived rows (retries, manual triggers, backfills) are never selected: they follow their job.
struct BulkSelector {
  std::optional<std::string> owner;
  std::string labels_json;
};

// A validated bulk command, as accepted into the store (JobStore::AcceptBulkOps).
struct BulkOp {
  std::string id;  // names the operation (its outcome's id), not a job
  CommandOp op;    // kPause, kResume, kDelete or kTrigger
  BulkSelector selector;
  std::string reason;  // optional note; a pause stores it on each job it pauses
  std::string actor;
  bool dry_run = false;  // count the matching jobs, change none
  SourcePosition source;
};

// A bulk operation as stored, with its progress. The walk visits shards 0..shard_count-1 in
// order and, within a shard, ids in order: (next_shard, after_id) is where the next step starts.
struct BulkOpState {
  BulkOp op;
  int32_t next_shard = 0;
  std::string after_id;
  int64_t matched = 0;  // jobs the selector matched so far
  int64_t changed = 0;  // of those, the ones the operation changed (a pause of a paused job does not)
  int64_t steps = 0;
  EpochMs accepted_at = 0;
  std::optional<EpochMs> finished_at;
  std::optional<EpochMs> published_at;  // its outcome record acknowledged by the broker
};

}  // namespace belfry
