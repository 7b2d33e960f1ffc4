// A brute-force oracle for interval jobs, shared by the unit tests that check slot arithmetic
// against it (manual fires, limited runs): every minute is tried, with the design's due rule
// written out again, independently of src/core/slot_math.
#pragma once

#include <cstdint>
#include <vector>

#include "belfry/job.h"
#include "core/slot_math.h"

namespace belfry {

inline JobSpec IntervalJob(int32_t interval, int32_t offset, int32_t shard) {
  JobSpec s;
  s.id = "j";
  s.interval_minutes = interval;
  s.offset_minutes = offset;
  s.shard = shard;
  return s;
}

// The job's slots in [from, to) minutes, its start_at and end_at applied, by brute force over
// every minute. REQUIRES: from_minute >= 0.
inline std::vector<EpochMs> BruteForceSlots(const JobSpec& s, int64_t from_minute, int64_t to_minute,
                                            int64_t tick_ms) {
  std::vector<EpochMs> out;
  for (int64_t m = from_minute; m < to_minute; ++m) {
    const EpochMs slot = SlotMs(m, s.shard, tick_ms);
    if (m % s.interval_minutes != s.offset_minutes) continue;
    if (s.start_at && slot < *s.start_at) continue;
    if (s.end_at && slot >= *s.end_at) continue;
    out.push_back(slot);
  }
  return out;
}

}  // namespace belfry
