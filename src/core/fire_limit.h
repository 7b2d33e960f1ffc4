// Limited runs (a job's optional maxFires): the rule that stops a job after N fires while the
// trigger path stays read-only. See docs/fire-limits.md.
//
// The count is never written per fire. When a command is applied, the job's effective window
// (the jobs.start_at and end_at the tick query reads) becomes [fires_from_ms, the start of the
// minute after its N-th slot from there), within the dates it asked for. fires_from_ms is the
// upsert's Kafka timestamp: no slot before it fires, not even in a catch-up, so the fires are
// exactly the window's slots. A pause stops the count; a resume moves the slots fired so far into
// `fires_before` and opens a new window at the resume. The remaining count is derived on read.
#pragma once

#include <cstdint>
#include <optional>

#include "belfry/clock.h"
#include "belfry/job.h"
#include "core/time_zone_database.h"

namespace belfry {

// maxFires is 1..kMaxFires.
inline constexpr int32_t kMaxFires = 100'000;

// The job's slots in [from_ms, to_ms) by its schedule (interval or calendar, start_at and end_at
// applied, paused ignored), counting at most `cap` of them. 0 for one-shots. A calendar job's
// zone comes from `zones`, here and in the functions below.
int64_t CountJobSlots(const TimeZoneDatabase& zones, const JobSpec& spec, int64_t tick_ms, EpochMs from_ms,
                      EpochMs to_ms, int64_t cap);

// Sets spec->start_at and spec->end_at, the window the tick query applies, for a limited job
// (spec->max_fires set): from the later of spec->requested_start_at and spec->fires_from_ms, to
// the earlier of spec->requested_end_at and the start of the minute after the
// (max_fires - fires_before)-th slot from that start (fires_from_ms itself when no fire is left).
// A job without max_fires gets its requested dates.
void ApplyFireLimit(const TimeZoneDatabase& zones, JobSpec* spec, int64_t tick_ms);

// How many of a limited job's fires are left at `now_ms`: max_fires, less fires_before, less its
// slots from fires_from_ms up to and including now_ms (only up to paused_at while paused), never
// below 0. nullopt for a job without max_fires.
std::optional<int64_t> FiresRemaining(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                      std::optional<EpochMs> paused_at, int64_t tick_ms, EpochMs now_ms);

// A limited job resumed by a command timestamped resume_ms after a pause that took effect at
// paused_at: the slots its last run counted before the pause move to fires_before, counting
// starts again at max(resume_ms, paused_at), and end_at is recomputed (ApplyFireLimit).
// REQUIRES: spec->max_fires.
void ResumeFireLimit(const TimeZoneDatabase& zones, JobSpec* spec, EpochMs paused_at, EpochMs resume_ms,
                     int64_t tick_ms);

}  // namespace belfry
