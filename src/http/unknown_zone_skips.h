// UnknownZoneSkips: the calendar jobs this node's ticks skip because their time zone is missing
// from its tz database (a node with newer tzdata accepted them; docs/calendar-schedules.md, "A
// zone this node does not know"). Counts them in belfry_calendar_jobs_unknown_zone_skipped_total,
// logs each zone once per process, and remembers the zones for GET /readyz (which stays ready:
// one job must not take a node out of service).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tzdb/system_time_zone_database.h"

namespace belfry {

class UnknownZoneSkips final {
 public:
  // Registers the counter in `registry`, which must outlive this object. The counter has no
  // label: the zones are in the log and in /readyz, so the series count stays fixed. The log
  // names the version of `time_zones`, which must outlive this object.
  explicit UnknownZoneSkips(prometheus::Registry& registry,
                            const TimeZoneDatabase& time_zones = SystemTimeZones());
  UnknownZoneSkips(const UnknownZoneSkips&) = delete;
  UnknownZoneSkips& operator=(const UnknownZoneSkips&) = delete;

  // One tick query skipped `jobs` slot-planned calendar jobs of `zone` (PgDueQueryStream's
  // UnknownZoneHandler). The first call for a zone logs a warning naming it. Thread-safe.
  void OnSkipped(std::string_view zone, int64_t jobs);

  // The zones skipped since start, in name order. Thread-safe.
  std::vector<std::string> zones() const;

 private:
  prometheus::Counter& skipped_;
  const TimeZoneDatabase& time_zones_;
  mutable std::mutex mu_;
  std::set<std::string, std::less<>> zones_;  // guarded by mu_
};

}  // namespace belfry
