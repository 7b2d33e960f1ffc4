// Slot arithmetic: the time model of design.md, as plain functions over plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "belfry/clock.h"
#include "belfry/job.h"
#include "belfry/job_store.h"
#include "core/time_zone_database.h"

namespace belfry {

// Also a macro, the one definition the SQL of src/pg splices in (BELFRY_STRINGIFY).
#define BELFRY_MS_PER_MINUTE 60000
constexpr int64_t kMsPerMinute = BELFRY_MS_PER_MINUTE;
// The longest interval, and the factor of the stored `phase` key: interval * 1440 + offset
// (migrations/0001_init.sql; a one-shot's phase is -run_minute, migrations/0002).
constexpr int32_t kMinutesPerDay = 1440;

// floor(ms / 60000), correct for negative times too.
int64_t EpochMinuteOf(EpochMs ms);

// The first minute that starts at or after `ms`: ceil(ms / 60000), correct for negative times too.
int64_t FirstMinuteAtOrAfter(EpochMs ms);

// The instant minute `minute` starts: minute * 60000.
EpochMs MinuteStartMs(int64_t minute);

// The tick of `shard_count` shards: one minute / shard_count. REQUIRES: shard_count > 0.
int64_t TickMsOf(int32_t shard_count);

// The `phase` key the tick index matches on for an interval job: interval * 1440 + offset.
int64_t PhaseKey(int32_t interval_minutes, int32_t offset_minutes);

// Non-negative remainder: ((a % m) + m) % m. REQUIRES: m > 0.
int64_t PositiveMod(int64_t a, int64_t m);

// slot(M, s) = M*60 s + s*tick.
EpochMs SlotMs(int64_t minute, int32_t shard, int64_t tick_ms);

// The (minute, shard) of the first slot at or after `ms`. REQUIRES: shard_count*tick_ms == 60000.
struct SlotRef {
  int64_t minute = 0;
  int32_t shard = 0;
};
SlotRef FirstSlotAtOrAfter(EpochMs ms, int64_t tick_ms);

// The latest minute M with SlotMs(M, shard) <= ms.
int64_t LastSlotMinuteAtOrBefore(EpochMs ms, int32_t shard, int64_t tick_ms);

// True iff a job with this interval and offset is due in `minute` (ignoring start/end/paused).
bool IsDueInMinute(int32_t interval_minutes, int32_t offset_minutes, int64_t minute);

// Full due rule of design.md, for one job at one slot.
bool IsDueAtSlot(int32_t interval_minutes, int32_t offset_minutes, const std::optional<EpochMs>& start_at,
                 const std::optional<EpochMs>& end_at, bool paused, int64_t minute, EpochMs slot_ms);

// The tick query's terms for one minute: one (interval, minute mod interval) per interval.
std::vector<PhaseTerm> TermsForMinute(const std::vector<int32_t>& intervals, int64_t minute);

// Terms covering every minute in [first, last]: per interval, each offset due at least once.
// REQUIRES: first <= last.
std::vector<PhaseTerm> TermsForRange(const std::vector<int32_t>& intervals, int64_t first, int64_t last);

// The latest minute <= last_minute in which (interval, offset) is due.
int64_t LatestDueMinute(int32_t interval_minutes, int32_t offset_minutes, int64_t last_minute);

// The first minute whose slot of `shard` is strictly after `after_ms`, not before start_at, in
// which (interval, offset) is due (ignoring end_at and paused). REQUIRES: interval_minutes > 0.
int64_t FirstDueMinuteAfter(int32_t interval_minutes, int32_t offset_minutes, int32_t shard, int64_t tick_ms,
                            const std::optional<EpochMs>& start_at, EpochMs after_ms);

// The first `n` trigger instants (slot times) strictly after `after_ms` for a job, honouring
// start_at and end_at (not paused). Fewer than n when end_at cuts the schedule short.
std::vector<EpochMs> NextTriggerTimes(int32_t interval_minutes, int32_t offset_minutes, int32_t shard,
                                      int64_t tick_ms, const std::optional<EpochMs>& start_at,
                                      const std::optional<EpochMs>& end_at, EpochMs after_ms, int n);

// The same for a stored job of any kind: a one-shot has at most one, the slot of its
// run_minute (when it fires, which differs from its scheduledFor when a past runAt fires late);
// a calendar job's come from its cron expression and its zone in `zones` (core/calendar_schedule.h).
std::vector<EpochMs> NextJobTriggerTimes(const TimeZoneDatabase& zones, const JobSpec& spec, int64_t tick_ms,
                                         EpochMs after_ms, int n);

}  // namespace belfry
