#include "core/slot_math.h"

#include "core/calendar_schedule.h"

namespace belfry {

int64_t PositiveMod(int64_t a, int64_t m) {
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}

int64_t EpochMinuteOf(EpochMs ms) { return (ms - PositiveMod(ms, kMsPerMinute)) / kMsPerMinute; }

int64_t FirstMinuteAtOrAfter(EpochMs ms) { return -EpochMinuteOf(-ms); }

EpochMs MinuteStartMs(int64_t minute) { return minute * kMsPerMinute; }

int64_t TickMsOf(int32_t shard_count) { return kMsPerMinute / shard_count; }

int64_t PhaseKey(int32_t interval_minutes, int32_t offset_minutes) {
  return static_cast<int64_t>(interval_minutes) * kMinutesPerDay + offset_minutes;
}

EpochMs SlotMs(int64_t minute, int32_t shard, int64_t tick_ms) {
  return MinuteStartMs(minute) + static_cast<int64_t>(shard) * tick_ms;
}

SlotRef FirstSlotAtOrAfter(EpochMs ms, int64_t tick_ms) {
  // Round ms up to a multiple of tick_ms.
  const int64_t rem = PositiveMod(ms, tick_ms);
  const EpochMs at = rem == 0 ? ms : ms + (tick_ms - rem);
  const int64_t minute = EpochMinuteOf(at);
  const int64_t within = at - minute * kMsPerMinute;
  return SlotRef{minute, static_cast<int32_t>(within / tick_ms)};
}

int64_t LastSlotMinuteAtOrBefore(EpochMs ms, int32_t shard, int64_t tick_ms) {
  return EpochMinuteOf(ms - static_cast<int64_t>(shard) * tick_ms);
}

bool IsDueInMinute(int32_t interval_minutes, int32_t offset_minutes, int64_t minute) {
  return PositiveMod(minute, interval_minutes) == offset_minutes;
}

bool IsDueAtSlot(int32_t interval_minutes, int32_t offset_minutes, const std::optional<EpochMs>& start_at,
                 const std::optional<EpochMs>& end_at, bool paused, int64_t minute, EpochMs slot_ms) {
  if (paused) return false;
  if (!IsDueInMinute(interval_minutes, offset_minutes, minute)) return false;
  if (start_at && *start_at > slot_ms) return false;
  if (end_at && *end_at <= slot_ms) return false;
  return true;
}

std::vector<PhaseTerm> TermsForMinute(const std::vector<int32_t>& intervals, int64_t minute) {
  std::vector<PhaseTerm> terms;
  terms.reserve(intervals.size());
  for (int32_t i : intervals) {
    terms.push_back(PhaseTerm{i, {static_cast<int32_t>(PositiveMod(minute, i))}});
  }
  return terms;
}

std::vector<PhaseTerm> TermsForRange(const std::vector<int32_t>& intervals, int64_t first, int64_t last) {
  std::vector<PhaseTerm> terms;
  terms.reserve(intervals.size());
  const int64_t span = last - first + 1;
  for (int32_t i : intervals) {
    PhaseTerm t{i, {}};
    const int64_t count = span >= i ? i : span;
    const int64_t start = PositiveMod(first, i);
    t.offsets.reserve(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) t.offsets.push_back(static_cast<int32_t>((start + k) % i));
    terms.push_back(std::move(t));
  }
  return terms;
}

int64_t LatestDueMinute(int32_t interval_minutes, int32_t offset_minutes, int64_t last_minute) {
  return last_minute - PositiveMod(last_minute - offset_minutes, interval_minutes);
}

int64_t FirstDueMinuteAfter(int32_t interval_minutes, int32_t offset_minutes, int32_t shard, int64_t tick_ms,
                            const std::optional<EpochMs>& start_at, EpochMs after_ms) {
  // First candidate minute: the minute whose slot is strictly after `after_ms`, and not before
  // start_at's slot.
  int64_t minute = LastSlotMinuteAtOrBefore(after_ms, shard, tick_ms) + 1;
  if (start_at) {
    const int64_t start_minute = LastSlotMinuteAtOrBefore(*start_at - 1, shard, tick_ms) + 1;
    if (start_minute > minute) minute = start_minute;
  }
  // Advance to the first due minute.
  return minute + PositiveMod(offset_minutes - minute, interval_minutes);
}

std::vector<EpochMs> NextTriggerTimes(int32_t interval_minutes, int32_t offset_minutes, int32_t shard,
                                      int64_t tick_ms, const std::optional<EpochMs>& start_at,
                                      const std::optional<EpochMs>& end_at, EpochMs after_ms, int n) {
  std::vector<EpochMs> out;
  if (n <= 0 || interval_minutes <= 0) return out;
  int64_t minute = FirstDueMinuteAfter(interval_minutes, offset_minutes, shard, tick_ms, start_at, after_ms);
  for (; static_cast<int>(out.size()) < n; minute += interval_minutes) {
    const EpochMs slot = SlotMs(minute, shard, tick_ms);
    if (end_at && *end_at <= slot) break;
    out.push_back(slot);
  }
  return out;
}

std::vector<EpochMs> NextJobTriggerTimes(const TimeZoneDatabase& zones, const JobSpec& spec, int64_t tick_ms,
                                         EpochMs after_ms, int n) {
  if (spec.calendar) {
    std::vector<EpochMs> out;
    for (const CalendarFire& f : NextCalendarJobFires(zones, spec, tick_ms, after_ms, n)) {
      out.push_back(SlotMs(f.utc_minute, spec.shard, tick_ms));
    }
    return out;
  }
  if (!spec.one_shot()) {
    return NextTriggerTimes(spec.interval_minutes, spec.offset_minutes, spec.shard, tick_ms, spec.start_at,
                            spec.end_at, after_ms, n);
  }
  const EpochMs fires_at = SlotMs(spec.run_minute, spec.shard, tick_ms);
  if (n <= 0 || fires_at <= after_ms) return {};
  return {fires_at};
}

}  // namespace belfry
