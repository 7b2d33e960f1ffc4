// TriggerPathStore: what the trigger path reads from where jobs live, and the one thing it writes
// there, only when the broker refuses a trigger for good. Called by ShardFirer (the tick query)
// and TriggerDeadLetterer. Implemented by PgJobStore (src/pg/pg_job_store_due.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "belfry/job.h"
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

// The last trigger of a job that the broker refused for good (docs/reliability.md,
// "Undeliverable triggers"). Written only when that happens, never on the firing path.
struct DeliveryErrorRecord {
  std::string job_id;
  std::string topic;  // the job's topic the trigger was refused by
  EpochMs slot_ms = 0;
  std::string error;
  EpochMs at_ms = 0;  // when the refusal was recorded
};

class TriggerPathStore {
 public:
  virtual ~TriggerPathStore() = default;

  // Streams every due job for `q` into `fn`, without holding the whole result in memory.
  // Read-only. Returns Retryable on connection faults (fn may have been called for a prefix).
  virtual Status ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) = 0;

  // Records `e` as its job's last delivery error, replacing the one before. Idempotent.
  // Retryable on connection faults.
  virtual Status RecordDeliveryError(const DeliveryErrorRecord& e) = 0;
};

}  // namespace belfry
