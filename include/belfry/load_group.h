// What a load projection reads from a JobStore (core/load_projection.h, docs/load-projection.md):
// the unpaused jobs that can fire in a window, as groups of jobs that fire in the same minutes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "belfry/clock.h"

namespace belfry {

// One cron_slots row of a calendar job (migrations/0006_calendar_schedules.sql).
struct LoadSlotRow {
  int64_t key = 0;
  int32_t hour_mask = 0;
  int32_t dom_mask = 0;
  int32_t month_mask = 0;
  int32_t dow_mask = 0;
  bool day_or = false;

  bool operator==(const LoadSlotRow&) const = default;
};

// Jobs of one shard that fire in the same minutes: same kind, schedule, start and end.
struct LoadGroup {
  enum class Kind { kInterval, kOneShot, kCalendar };
  Kind kind = Kind::kInterval;
  int32_t shard = 0;
  int32_t interval_minutes = 0;    // kInterval
  int32_t offset_minutes = 0;      // kInterval
  int64_t run_minute = 0;          // kOneShot (stored retries included)
  std::vector<LoadSlotRow> slots;  // kCalendar: the job's rows, any order
  std::optional<EpochMs> start_at;
  std::optional<EpochMs> end_at;
  std::string label;  // the owner, topic or label value the projection is broken down by; "" when it is not
  int64_t jobs = 0;
};

// Which groups to read: every unpaused job that may fire in [first_minute, last_minute]. A
// start or end that cannot matter inside the window is read as absent, so that jobs differing
// only there share a group. `by`: "" (no breakdown), "owner", "topic" or "label:<key>" (the
// value of the job's label <key>, "" for jobs without it): ParseLoadBreakdown's rule.
struct LoadGroupQuery {
  int64_t first_minute = 0;
  int64_t last_minute = 0;
  std::string by;
  // At most this many groups in all (0: no limit). A breakdown by owner can have nearly
  // one group per job (millions, and as many hundred bytes each); a store that would read more
  // answers Invalid "too_many_groups" instead of reading them.
  int64_t max_groups = 0;
};

struct LoadGroups {
  std::vector<LoadGroup> groups;
  std::vector<std::pair<int32_t, std::string>> zones;  // cron_zones: (id, IANA name)
};

// The unpaused interval jobs with one (interval, offset), split by whether their offset is
// pinned (chosen by the producer: offsetMinutes, startDateTime, or a cron expression stored as
// an interval) or movable (taken from the command's timestamp). What a rebalance reads.
struct OffsetLoad {
  int32_t interval_minutes = 0;
  int32_t offset_minutes = 0;
  int64_t pinned = 0;
  int64_t movable = 0;
};

}  // namespace belfry
