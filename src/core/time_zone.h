// TimeZone: a zone as the core computes with it, the UTC offset in force at any instant. The core
// never reads the tz database: a TimeZoneDatabase (core/time_zone_database.h), implemented outside
// the core (src/tzdb), hands out zones that are already in memory.
#pragma once

#include <cstdint>

namespace belfry {

// The UTC offset in force over [begin, end), in seconds since the Unix epoch. The first period of a
// zone begins, and its last ends, far outside years 0..9999 (the calendar code treats anything past
// year 9999 as "never").
struct OffsetPeriod {
  int64_t begin = 0;
  int64_t end = 0;
  int32_t offset_seconds = 0;  // local time minus UTC
};

// Immutable once handed out. Thread-safe; never does I/O.
class TimeZone {
 public:
  virtual ~TimeZone() = default;

  // The period that contains `utc_seconds` (begin <= utc_seconds < end). Consecutive periods
  // meet: PeriodAt(p.end).begin == p.end and PeriodAt(p.begin - 1).end == p.begin.
  virtual OffsetPeriod PeriodAt(int64_t utc_seconds) const = 0;
};

}  // namespace belfry
