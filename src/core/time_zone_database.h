// TimeZoneDatabase: where the core gets its zones. The core does no I/O (src/core/CMakeLists.txt),
// so it never opens the tz database itself: whoever calls a calendar function passes the
// database in, and the database hands out zones already in memory (core/time_zone.h). The host's
// database, read from /usr/share/zoneinfo, is SystemTimeZoneDatabase (src/tzdb); unit tests may
// use an in-memory one (tests/fakes/fake_time_zone_database.h). See docs/calendar-schedules.md,
// "Where the zones come from".
#pragma once

#include <string>
#include <string_view>

#include "core/time_zone.h"

namespace belfry {

class TimeZoneDatabase {
 public:
  virtual ~TimeZoneDatabase() = default;

  // The zone named `name` (an IANA name such as "Europe/Berlin"), or nullptr when the database has
  // none. A zone returned stays valid and unchanged for the life of the database. Thread-safe.
  virtual const TimeZone* Find(std::string_view name) const = 0;

  // The database's version (tzdata "2025b"), or "unknown". Thread-safe.
  virtual std::string Version() const = 0;
};

}  // namespace belfry
