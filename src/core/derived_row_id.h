// DerivedRowId: the ids of the one-shot rows belfry stores on a job's behalf, never by an upsert:
//   "<job>#retry#<scheduledFor ms>#<attempt>"   a scheduled retry of a failed execution
//   "<job>#trigger#<scheduledFor ms>"           a `trigger` command (fire once, now)
//   "<job>#backfill#<scheduledFor ms>"          one slot of a `backfill` command
// The id is a function of the job and the slot, so storing the same row twice finds it there
// (INSERT ... ON CONFLICT DO NOTHING), and the firer recovers the job, the slot's kind and the
// attempt from the id alone, without a column read on the trigger path. Command ids may not
// contain a marker (ReservedIdMarker), so no job collides with a derived row.
// See docs/executions.md, "Retries", and docs/manual-fires.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "belfry/clock.h"

namespace belfry {

enum class DerivedKind { kRetry, kTrigger, kBackfill };

// "retry", "trigger", "backfill": the marker's word, and the value of a manual trigger's
// belfry-manual header and "manual" field.
const char* DerivedKindName(DerivedKind kind);

// REQUIRES: attempt >= 1 for kRetry (ignored otherwise).
std::string DerivedRowId(std::string_view job_id, DerivedKind kind, EpochMs scheduled_for_ms, int32_t attempt = 0);

struct DerivedRowRef {
  std::string_view job_id;
  DerivedKind kind = DerivedKind::kRetry;
  EpochMs scheduled_for_ms = 0;
  int32_t attempt = 0;  // >= 1 for kRetry, 0 otherwise
};

// The parts of a derived row's id; nullopt for any other id (a job's own id, or a malformed one).
std::optional<DerivedRowRef> ParseDerivedRowId(std::string_view id);

// The first reserved marker ("#retry#", "#trigger#", "#backfill#") that `id` contains, if any.
std::optional<std::string_view> ReservedIdMarker(std::string_view id);

}  // namespace belfry
