#include "core/catchup_planner.h"

#include <algorithm>

#include "core/shard_layout.h"
#include "core/slot_math.h"

namespace belfry {
namespace {

// Smallest minute m with SlotMs(m, shard) >= t.
int64_t FirstMinuteWithSlotAtOrAfter(EpochMs t, int32_t shard, int64_t tick_ms) {
  return LastSlotMinuteAtOrBefore(t - 1, shard, tick_ms) + 1;
}

}  // namespace

FiringPlan PlanFiring(const std::optional<int64_t>& fired_through, int64_t target_minute, int32_t shard,
                      EpochMs now, const SchedulerConfig& cfg) {
  FiringPlan plan;
  plan.policy = cfg.misfire_policy;
  const int64_t first = fired_through ? *fired_through + 1 : target_minute;
  if (first > target_minute) {
    plan.nothing_to_do = true;
    plan.advance_to = fired_through ? *fired_through : target_minute;
    return plan;
  }
  plan.advance_to = target_minute;
  const int64_t on_time_from =
      std::max(first, FirstMinuteWithSlotAtOrAfter(now - cfg.misfire_threshold_ms, shard, cfg.tick_ms));
  const int64_t window_from =
      std::max(first, FirstMinuteWithSlotAtOrAfter(now - cfg.max_catchup_ms, shard, cfg.tick_ms));
  plan.on_time = MinuteRange{on_time_from, target_minute};
  plan.missed = MinuteRange{window_from, std::min(on_time_from, target_minute + 1) - 1};
  plan.too_old = std::max<int64_t>(0, std::min(window_from, target_minute + 1) - first);
  return plan;
}

MinuteRange DebtToAdd(const FiringPlan& plan) {
  return plan.policy == MisfirePolicy::kSkip ? MinuteRange{} : plan.missed;
}

DebtChunk PlanDebtChunk(const MinuteRange& lowest, const SchedulerConfig& cfg) {
  DebtChunk chunk;
  switch (cfg.misfire_policy) {
    case MisfirePolicy::kFireAll: {
      const int64_t n = std::max<int64_t>(1, cfg.catch_up_chunk_minutes);
      chunk.fire = MinuteRange{lowest.first, std::min(lowest.last, lowest.first + n - 1)};
      chunk.settle = chunk.fire;
      break;
    }
    case MisfirePolicy::kCoalesce:
      chunk.fire = lowest;
      chunk.coalesced = true;
      chunk.settle = lowest;
      break;
    case MisfirePolicy::kSkip:
      chunk.settle = lowest;
      chunk.skipped = lowest.size();
      break;
  }
  return chunk;
}

}  // namespace belfry

namespace belfry {
namespace {

ShardLayout LayoutOr(const ShardLayout* layout, const SchedulerConfig& cfg) {
  return layout != nullptr ? *layout : ShardLayout{cfg.shard_count};
}

}  // namespace

std::vector<FireRequest> CatchUpRequests(const std::vector<ShardState>& states, EpochMs now, int64_t grace_ms,
                                         const SchedulerConfig& cfg, const ShardLayout* layout) {
  const ShardLayout l = LayoutOr(layout, cfg);
  std::vector<FireRequest> out;
  for (const ShardState& s : states) {
    if (!s.fired_through || s.claim_live) continue;
    if (s.shard < 0 || s.shard >= MaxFiringShards(l)) continue;
    const std::optional<int64_t> last_due = LastLayoutSlotMinuteAtOrBefore(l, now - grace_ms, s.shard);
    if (last_due && *last_due > *s.fired_through) out.push_back(FireRequest{s.shard, *last_due, false});
  }
  return out;
}

std::vector<FireRequest> DebtRequests(const std::vector<ShardState>& states, const SchedulerConfig& cfg,
                                      const ShardLayout* layout) {
  const ShardLayout l = LayoutOr(layout, cfg);
  std::vector<const ShardState*> owing;
  for (const ShardState& s : states) {
    if (s.debt_minutes <= 0 || !s.debt_first || s.debt_live) continue;
    if (s.shard < 0 || s.shard >= MaxFiringShards(l)) continue;
    owing.push_back(&s);
  }
  std::stable_sort(owing.begin(), owing.end(),
                   [](const ShardState* a, const ShardState* b) { return *a->debt_first < *b->debt_first; });
  std::vector<FireRequest> out;
  out.reserve(owing.size());
  for (const ShardState* s : owing) out.push_back(FireRequest{s->shard, *s->debt_first, false, true});
  return out;
}

int64_t TotalDebtMinutes(const std::vector<ShardState>& states) {
  int64_t total = 0;
  for (const ShardState& s : states) total += std::max<int64_t>(0, s.debt_minutes);
  return total;
}

std::vector<FireRequest> WatermarkStarts(const std::vector<ShardState>& states, EpochMs now, int64_t grace_ms,
                                         const SchedulerConfig& cfg, const ShardLayout* layout) {
  const ShardLayout l = LayoutOr(layout, cfg);
  std::vector<FireRequest> out;
  for (const ShardState& s : states) {
    if (s.fired_through || s.claim_live) continue;
    if (s.shard < 0 || s.shard >= MaxFiringShards(l)) continue;
    const std::optional<int64_t> last_due = LastLayoutSlotMinuteAtOrBefore(l, now - grace_ms, s.shard);
    if (last_due) out.push_back(FireRequest{s.shard, *last_due, false});
  }
  return out;
}

}  // namespace belfry
