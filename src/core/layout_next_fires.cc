#include "core/layout_next_fires.h"

#include "core/fire_limit.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"

namespace belfry {

std::vector<NextFire> LayoutNextFires(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                      const ShardLayout& layout, EpochMs now, int n) {
  const int32_t stored = spec.shard;  // the row's shard: the partition that stores it
  const FiringBasis basis = FiringBasisOf(layout, EpochMinuteOf(now), stored);
  JobSpec at_basis = spec;
  at_basis.shard = basis.shard;
  // The minutes a job fires do not depend on its slot: take them from a minute early (a cut-over
  // can move now's minute's slot past now) and place each at its layout's slot.
  std::vector<NextFire> out;
  for (NextFire& f : NextFires(zones, at_basis, paused, basis.tick_ms, now - kMsPerMinute, n + 2)) {
    f.at = StoredShardSlotMs(layout, EpochMinuteOf(f.at), stored);
    if (f.at <= now) continue;
    out.push_back(std::move(f));
    if (static_cast<int>(out.size()) == n) break;
  }
  return out;
}

std::optional<int64_t> LayoutFiresRemaining(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                            std::optional<EpochMs> paused_at, const ShardLayout& layout,
                                            EpochMs now) {
  const FiringBasis basis = FiringBasisOf(layout, EpochMinuteOf(now), spec.shard);
  JobSpec at_basis = spec;
  at_basis.shard = basis.shard;
  return FiresRemaining(zones, at_basis, paused, paused_at, basis.tick_ms, now);
}

}  // namespace belfry
