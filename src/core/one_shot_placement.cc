#include "core/one_shot_placement.h"

#include <algorithm>

#include "core/slot_math.h"

namespace belfry {

OneShotPlacement PlaceOneShot(EpochMs run_at_ms, int32_t shard, EpochMs message_ms,
                              const OneShotRules& rules) {
  OneShotPlacement p;
  const int64_t own_minute = EpochMinuteOf(run_at_ms);
  p.scheduled_for_ms = SlotMs(own_minute, shard, rules.tick_ms);
  const EpochMs deadline_ms = p.scheduled_for_ms + rules.max_catchup_ms;
  const int64_t deadline_minute = LastSlotMinuteAtOrBefore(deadline_ms, shard, rules.tick_ms);
  if (p.scheduled_for_ms > message_ms) {
    p.run_minute = own_minute;
    p.late_limit_minute = rules.fire_late ? std::max(own_minute, deadline_minute) : -1;
    return p;
  }
  if (!rules.fire_late || message_ms > deadline_ms) {
    p.run_minute = own_minute;
    p.late_limit_minute = -1;
    p.fires = false;
    return p;
  }
  // The first slot of this shard at or after message + margin.
  const EpochMs earliest = message_ms + kOneShotLateMarginMs;
  int64_t m = EpochMinuteOf(earliest);
  if (SlotMs(m, shard, rules.tick_ms) < earliest) ++m;
  p.run_minute = m;
  p.late_limit_minute = std::max(m, deadline_minute);
  return p;
}

}  // namespace belfry
