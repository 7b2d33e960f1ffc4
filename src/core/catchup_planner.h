// CatchupPlanner: given a shard's watermark and the minute to fire up to, decides which
// shard-minutes to fire, coalesce, skip or drop as too old, per the misfire policy.
#pragma once

#include <cstdint>
#include <optional>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/shard_layout.h"
#include "belfry/shard_ledger.h"

namespace belfry {

struct FiringPlan {
  // Minutes still within the misfire threshold: fired each, in order, by this firing.
  MinuteRange on_time;
  // Missed minutes within max_catchup. Not fired by this firing: under fire_all and coalesce
  // they become catch-up debt (DebtToAdd), fired later by debt firings; skip fires none.
  MinuteRange missed;
  MisfirePolicy policy = MisfirePolicy::kFireAll;
  int64_t too_old = 0;  // missed minutes older than max_catchup, dropped under every policy
  int64_t advance_to = 0;  // the watermark once the plan is done
  bool nothing_to_do = false;  // the shard is already fired through target
};

// REQUIRES: cfg.tick_ms * cfg.shard_count == 60000.
// fired_through == nullopt (a shard that never fired) plans just the target minute.
FiringPlan PlanFiring(const std::optional<int64_t>& fired_through, int64_t target_minute, int32_t shard,
                      EpochMs now, const SchedulerConfig& cfg);

// The missed minutes the plan leaves owed: `missed` under fire_all and coalesce, none under skip.
MinuteRange DebtToAdd(const FiringPlan& plan);

// One debt firing's share of a shard's debt, from the lowest contiguous range owed.
struct DebtChunk {
  // What this firing fires: under fire_all the lowest `catch_up_chunk_minutes` minutes, one query
  // each with its original slot; under coalesce the whole range, as one coalesced query; under
  // skip (debt left from another policy) nothing.
  MinuteRange fire;
  bool coalesced = false;
  // What the firing removes from the debt once done: `fire`, or (skip) the whole range.
  MinuteRange settle;
  int64_t skipped = 0;  // minutes settled without firing (skip)
};

// A debt minute is owed until fired: max_catchup was applied when it was found missed
// (PlanFiring), so a slow catch-up never drops what it accepted. REQUIRES: !lowest.empty().
DebtChunk PlanDebtChunk(const MinuteRange& lowest, const SchedulerConfig& cfg);

}  // namespace belfry

#include <vector>

#include "belfry/shard_ledger.h"

namespace belfry {

struct FireRequest {
  int32_t shard = 0;
  int64_t minute = 0;  // the minute to fire up to (unused by debt requests)
  bool on_time = true;
  bool debt = false;  // a debt firing: drains a chunk of the shard's debt (ShardFirer::BeginDebt)
};

// Shards that should have fired by `now - grace_ms` but are not recorded as fired and are not
// claimed by a live node: one request per shard, up to its latest due minute. Shards that never
// fired have no watermark to catch up from: see WatermarkStarts.
// With `layout` (a reshard under way, docs/resharding.md), the shards and slots are the
// layout's, minute by minute; without, cfg's.
std::vector<FireRequest> CatchUpRequests(const std::vector<ShardState>& states, EpochMs now, int64_t grace_ms,
                                         const SchedulerConfig& cfg, const ShardLayout* layout = nullptr);

// Shards that never fired and are not claimed by a live node, each with the minute its watermark
// should start at: the latest minute whose slot is at or before `now - grace_ms`. Recording that
// watermark (without firing) makes every shard's schedule start when the first node scans, not
// when the shard first fires: otherwise a node that stops within its first minute on a fresh
// database leaves the shards it never reached without a watermark, and the slots they miss until
// another node's ticker reaches them are never fired. Slots within the grace are left to the
// ticker, as in CatchUpRequests.
std::vector<FireRequest> WatermarkStarts(const std::vector<ShardState>& states, EpochMs now, int64_t grace_ms,
                                         const SchedulerConfig& cfg, const ShardLayout* layout = nullptr);

// Shards that owe catch-up debt and whose debt lease is not held by a live node: one debt
// request each, oldest debt first.
std::vector<FireRequest> DebtRequests(const std::vector<ShardState>& states, const SchedulerConfig& cfg,
                                      const ShardLayout* layout = nullptr);

// The shard-minutes owed by every shard: the catch-up debt still to fire.
int64_t TotalDebtMinutes(const std::vector<ShardState>& states);

}  // namespace belfry
