#include "core/fire_limit.h"

#include <algorithm>
#include <vector>

#include "core/slot_math.h"

namespace belfry {
namespace {

// The first minute whose slot is at or after `from_ms` (and start_at) in which an interval job is due.
int64_t FirstDueMinute(const JobSpec& spec, int64_t tick_ms, EpochMs from_ms) {
  return FirstDueMinuteAfter(spec.interval_minutes, spec.offset_minutes, spec.shard, tick_ms, spec.start_at,
                             from_ms - 1);
}

bool IntervalArithmetic(const JobSpec& spec) { return !spec.calendar && !spec.one_shot() && spec.interval_minutes > 0; }

// The n-th (1-based) slot at or after from_ms, within end_at; nullopt when there are fewer.
std::optional<EpochMs> NthSlot(const TimeZoneDatabase& zones, const JobSpec& spec, int64_t tick_ms,
                               EpochMs from_ms, int64_t n) {
  if (n <= 0) return std::nullopt;
  if (IntervalArithmetic(spec)) {
    const EpochMs slot =
        SlotMs(FirstDueMinute(spec, tick_ms, from_ms) + (n - 1) * spec.interval_minutes, spec.shard, tick_ms);
    if (spec.end_at && *spec.end_at <= slot) return std::nullopt;
    return slot;
  }
  const std::vector<EpochMs> slots =
      NextJobTriggerTimes(zones, spec, tick_ms, from_ms - 1, static_cast<int>(n));
  if (static_cast<int64_t>(slots.size()) < n) return std::nullopt;
  return slots.back();
}

}  // namespace

int64_t CountJobSlots(const TimeZoneDatabase& zones, const JobSpec& spec, int64_t tick_ms, EpochMs from_ms,
                      EpochMs to_ms, int64_t cap) {
  if (spec.one_shot() || cap <= 0) return 0;
  const EpochMs to = spec.end_at ? std::min(to_ms, *spec.end_at) : to_ms;
  if (to <= from_ms) return 0;
  if (IntervalArithmetic(spec)) {
    const int64_t first = FirstDueMinute(spec, tick_ms, from_ms);
    const int64_t last = LastSlotMinuteAtOrBefore(to - 1, spec.shard, tick_ms);
    if (last < first) return 0;
    return std::min(cap, (last - first) / spec.interval_minutes + 1);
  }
  JobSpec within = spec;
  within.end_at = to;
  return static_cast<int64_t>(
      NextJobTriggerTimes(zones, within, tick_ms, from_ms - 1, static_cast<int>(cap)).size());
}

void ApplyFireLimit(const TimeZoneDatabase& zones, JobSpec* spec, int64_t tick_ms) {
  spec->start_at = spec->requested_start_at;
  spec->end_at = spec->requested_end_at;
  if (!spec->max_fires) return;
  spec->start_at = spec->start_at ? std::max(*spec->start_at, spec->fires_from_ms) : spec->fires_from_ms;
  const int64_t left = static_cast<int64_t>(*spec->max_fires) - spec->fires_before;
  if (left <= 0) {
    spec->end_at = spec->end_at ? std::min(*spec->end_at, spec->fires_from_ms) : spec->fires_from_ms;
    return;
  }
  const std::optional<EpochMs> last = NthSlot(zones, *spec, tick_ms, spec->fires_from_ms, left);
  if (!last) return;  // the requested end comes first
  const EpochMs stop = (EpochMinuteOf(*last) + 1) * kMsPerMinute;
  spec->end_at = spec->end_at ? std::min(*spec->end_at, stop) : stop;
}

std::optional<int64_t> FiresRemaining(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                      std::optional<EpochMs> paused_at, int64_t tick_ms, EpochMs now_ms) {
  if (!spec.max_fires) return std::nullopt;
  const int64_t budget = std::max<int64_t>(0, static_cast<int64_t>(*spec.max_fires) - spec.fires_before);
  EpochMs until = now_ms + 1;  // a slot at now_ms counts as fired
  if (paused && paused_at) until = std::min(until, *paused_at);
  return budget - CountJobSlots(zones, spec, tick_ms, spec.fires_from_ms, until, budget);
}

void ResumeFireLimit(const TimeZoneDatabase& zones, JobSpec* spec, EpochMs paused_at, EpochMs resume_ms,
                     int64_t tick_ms) {
  const int64_t budget = std::max<int64_t>(0, static_cast<int64_t>(*spec->max_fires) - spec->fires_before);
  const int64_t counted = CountJobSlots(zones, *spec, tick_ms, spec->fires_from_ms, paused_at, budget);
  spec->fires_before = static_cast<int32_t>(std::min<int64_t>(*spec->max_fires, spec->fires_before + counted));
  spec->fires_from_ms = std::max(resume_ms, paused_at);
  ApplyFireLimit(zones, spec, tick_ms);
}

}  // namespace belfry
