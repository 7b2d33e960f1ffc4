#include "core/shard_lag.h"

#include <algorithm>

#include "core/shard_layout.h"
#include "core/slot_math.h"

namespace belfry {

ShardLag ComputeShardLag(const ShardState& s, EpochMs now, const ShardLayout& layout) {
  ShardLag lag;
  if (!s.fired_through) return lag;
  // The latest minute whose slot has passed: the shard is behind when it has not fired it.
  const std::optional<int64_t> due = LastLayoutSlotMinuteAtOrBefore(layout, now, s.shard);
  const int64_t past_watermark = due ? std::max<int64_t>(*due - *s.fired_through, 0) : 0;
  lag.behind_minutes = past_watermark + std::max<int64_t>(s.debt_minutes, 0);
  std::optional<int64_t> oldest;
  if (past_watermark > 0) oldest = *s.fired_through + 1;
  if (s.debt_minutes > 0 && s.debt_first) oldest = std::min(oldest.value_or(*s.debt_first), *s.debt_first);
  const auto slot = [&](int64_t minute) {
    return FiresInMinute(layout, minute, s.shard) ? LayoutSlotMs(layout, minute, s.shard) : minute * kMsPerMinute;
  };
  lag.lag_seconds = oldest ? static_cast<double>(std::max<int64_t>(now - slot(*oldest), 0)) / 1000.0 : 0.0;
  return lag;
}

}  // namespace belfry
