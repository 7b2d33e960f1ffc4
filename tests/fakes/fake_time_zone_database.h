// FakeTimeZoneDatabase: zones held in memory, each an initial UTC offset and a list of offset
// changes, for tests of the calendar code that must not depend on the host's tzdata. The core
// takes its zones through core/time_zone_database.h; production's is SystemTimeZoneDatabase.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/time_zone_database.h"

namespace belfry {

class FakeTimeZoneDatabase final : public TimeZoneDatabase {
 public:
  // From `at` (seconds since the Unix epoch, UTC) on, the zone's offset is `offset_seconds`.
  struct Change {
    int64_t at = 0;
    int32_t offset_seconds = 0;
  };

  explicit FakeTimeZoneDatabase(std::string version = "fake") : version_(std::move(version)) {}

  // Adds (or replaces) zone `name`. REQUIRES: `changes` in increasing order of `at`. Not
  // thread-safe against Find: add every zone first.
  void Add(const std::string& name, int32_t initial_offset_seconds, std::vector<Change> changes = {});

  const TimeZone* Find(std::string_view name) const override;
  std::string Version() const override { return version_; }

 private:
  const std::string version_;
  std::map<std::string, std::unique_ptr<const TimeZone>, std::less<>> zones_;
};

}  // namespace belfry
