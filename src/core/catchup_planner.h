// CatchupPlanner: given a shard's watermark and the minute to fire up to, decides which
// shard-minutes to fire, coalesce, skip or drop as too old, per the misfire policy.
#pragma once

#include <cstdint>
#include <optional>

#include "belfry/clock.h"
#include "belfry/config.h"

namespace belfry {

struct MinuteRange {
  int64_t first = 0;
  int64_t last = -1;  // empty when last < first
  bool empty() const { return last < first; }
  int64_t size() const { return empty() ? 0 : last - first + 1; }
};

struct FiringPlan {
  // Minutes still within the misfire threshold: fired each, first, in order.
  MinuteRange on_time;
  // Missed minutes within max_catchup. fire_all fires each (with its original slot), coalesce
  // fires each due job once over the whole range, skip fires none.
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

// How many shard-minutes the plan fires (coalesced range counts once per minute).
int64_t MissedMinutesFired(const FiringPlan& plan);

}  // namespace belfry

#include <vector>

#include "belfry/shard_ledger.h"

namespace belfry {

struct FireRequest {
  int32_t shard = 0;
  int64_t minute = 0;
  bool on_time = true;
};

// Shards that should have fired by `now - grace_ms` but are not recorded as fired and are not
// claimed by a live node: one request per shard, up to its latest due minute. Shards that never
// fired have no watermark to catch up from: see WatermarkStarts.
std::vector<FireRequest> CatchUpRequests(const std::vector<ShardState>& states, EpochMs now, int64_t grace_ms,
                                         const SchedulerConfig& cfg);

// Shards that never fired and are not claimed by a live node, each with the minute its watermark
// should start at: the latest minute whose slot is at or before `now - grace_ms`. Recording that
// watermark (without firing) makes every shard's schedule start when the first node scans, not
// when the shard first fires: otherwise a node that stops within its first minute on a fresh
// database leaves the shards it never reached without a watermark, and the slots they miss until
// another node's ticker reaches them are never fired. Slots within the grace are left to the
// ticker, as in CatchUpRequests.
std::vector<FireRequest> WatermarkStarts(const std::vector<ShardState>& states, EpochMs now, int64_t grace_ms,
                                         const SchedulerConfig& cfg);

}  // namespace belfry
