#include "core/shard_lag.h"

#include <algorithm>

#include "core/slot_math.h"

namespace belfry {

ShardLag ComputeShardLag(const ShardState& s, EpochMs now, int64_t tick_ms) {
  ShardLag lag;
  if (!s.fired_through) return lag;
  // The latest minute whose slot has passed: the shard is behind when it has not fired it.
  const int64_t due = LastSlotMinuteAtOrBefore(now, s.shard, tick_ms);
  const int64_t past_watermark = std::max<int64_t>(due - *s.fired_through, 0);
  lag.behind_minutes = past_watermark + std::max<int64_t>(s.debt_minutes, 0);
  std::optional<int64_t> oldest;
  if (past_watermark > 0) oldest = *s.fired_through + 1;
  if (s.debt_minutes > 0 && s.debt_first) oldest = std::min(oldest.value_or(*s.debt_first), *s.debt_first);
  lag.lag_seconds =
      oldest ? static_cast<double>(std::max<int64_t>(now - SlotMs(*oldest, s.shard, tick_ms), 0)) / 1000.0
             : 0.0;
  return lag;
}

}  // namespace belfry
