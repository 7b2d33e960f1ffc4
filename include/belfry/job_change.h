// The audit trail (docs/audit-trail.md): one JobChange per change a command, a manual fire or a
// bulk operation's step made to a job, kept in the store's history and published as a versioned
// change event to the changes topic (core/job_change.h encodes it).
#pragma once

#include <cstdint>
#include <string>

#include "belfry/job.h"

namespace belfry {

struct JobChange {
  int64_t change_id = 0;  // assigned by the store, increasing; 0 until stored
  std::string job_id;
  std::string op;       // the command's op: upsert, delete, pause, resume, trigger, backfill
  std::string bulk_id;  // the bulk operation that made it; empty for a job's own command
  std::string actor;    // who and why, as the command said (empty: not said)
  std::string reason;
  SourcePosition source;   // the command's position and timestamp (a bulk step's: its command's)
  EpochMs changed_at = 0;  // when the store applied it (its clock); 0 until stored
  // The job before and after, as EncodeJobJson shows it; empty when it did not (or no longer)
  // exist. A trigger or backfill leaves the job as it was: both are its state.
  std::string before_json;
  std::string after_json;
  std::string detail_json;  // what a trigger or backfill stored ({"slots":..}); empty for the others
};

}  // namespace belfry
