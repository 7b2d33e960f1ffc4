// SystemTimeZoneDatabase: the host's tz database (/usr/share/zoneinfo), read through Howard
// Hinnant's date/tz (USE_OS_TZDB) and each zone's TZif footer. The one TimeZoneDatabase of
// production; it lives outside the core because reading it is file I/O.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/time_zone_database.h"

namespace belfry {

class SystemTimeZoneDatabase final : public TimeZoneDatabase {
 public:
  SystemTimeZoneDatabase();
  SystemTimeZoneDatabase(const SystemTimeZoneDatabase&) = delete;
  SystemTimeZoneDatabase& operator=(const SystemTimeZoneDatabase&) = delete;
  ~SystemTimeZoneDatabase() override;

  // Reads the zone's file on the first call for a name (date/tz's data and the TZif footer), so
  // that the zone it returns answers PeriodAt from memory. Unknown names are not remembered.
  const TimeZone* Find(std::string_view name) const override;

  // date/tz's version, else the first line of tzdata.zi ("# version 2025b"), else "unknown".
  std::string Version() const override;

 private:
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::unique_ptr<const TimeZone>> zones_;  // guarded by mu_
};

// The process's SystemTimeZoneDatabase, for the adapters and tools that wire the host's zones into
// the core (date/tz's own database is process-wide too). Thread-safe.
const TimeZoneDatabase& SystemTimeZones();

}  // namespace belfry
