// LoadRebalance: a proposal of new offsets for interval jobs that flattens the busiest minutes of
// the day (issue 18; docs/load-projection.md, "Rebalance"). A dry run: it proposes moves and the
// peak they leave; an operator applies them (upserts with offsetMinutes), or not.
//
// The model: every interval divides 1440 (ValidateConfig), so the interval jobs' load repeats
// every UTC day, and minute d of the day carries every job whose offset is d mod its interval.
// Only jobs whose offset is not pinned (OffsetLoad::movable) may move, and only within their own
// interval (a job keeps how often it fires; only its phase changes). Calendar jobs and one-shots
// are not part of the daily cycle and are not counted.
//
// Greedy: the busiest minute d* that can still be lowered gets k movable jobs of one interval I
// moved from offset d* mod I to the offset o' of I whose busiest minute is the least busy, with
// k the largest that leaves no minute of o' above d*'s new load; a minute that no move can lower
// (only pinned jobs there, say) is left, and the next busiest is flattened. A job may move more than once; the
// plan proposes each job's net move, from its offset now to where it ends. Plain function over
// plain values; deterministic (ties to the smallest interval, then offset).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "belfry/load_group.h"
#include "belfry/load_reader.h"
#include "belfry/status.h"
#include "core/slot_math.h"  // kMinutesPerDay, the day the load repeats over

namespace belfry {

struct OffsetMove {
  int32_t interval_minutes = 0;
  int32_t from_offset = 0;
  int32_t to_offset = 0;
  int64_t jobs = 0;
  std::vector<std::string> example_ids;  // filled by the caller, if it wants
};

struct RebalancePlan {
  std::vector<OffsetMove> moves;  // by interval, then from, then to
  int64_t jobs_moved = 0;
  int64_t movable = 0;  // jobs whose offset is not pinned
  int64_t pinned = 0;
  int64_t jobs = 0;     // interval jobs, daily triggers = Σ jobs * 1440 / interval
  int64_t peak_before = 0;
  int32_t peak_minute_before = 0;  // minute of the UTC day (0..1439)
  int64_t peak_after = 0;
  int32_t peak_minute_after = 0;
  double mean = 0;  // triggers per minute, the same before and after
  // Triggers per minute of the UTC day, before and after the moves.
  std::vector<int64_t> before;
  std::vector<int64_t> after;
};

// Loads of intervals that do not divide 1440, or offsets outside [0, interval), are counted as
// pinned load nowhere (ignored). `max_moves` bounds the greedy steps.
RebalancePlan PlanRebalance(const std::vector<OffsetLoad>& loads, int64_t max_moves = 20'000);

// Reads `store`'s offset loads, plans, and gives each move up to `example_ids` ids of jobs it
// would move (distinct across the moves of one offset; at most 1,000 per offset).
StatusOr<RebalancePlan> ProposeRebalance(LoadReader& store, int32_t example_ids);

// The plan as `GET /v1/load/rebalance` and `belfry rebalance --dry-run --json` return it.
std::string EncodeRebalancePlanJson(const RebalancePlan& plan);

}  // namespace belfry
