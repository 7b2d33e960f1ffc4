#include "http/unknown_zone_skips.h"

#include <spdlog/spdlog.h>


namespace belfry {

UnknownZoneSkips::UnknownZoneSkips(prometheus::Registry& registry, const TimeZoneDatabase& time_zones)
    : skipped_(prometheus::BuildCounter()
                   .Name("belfry_calendar_jobs_unknown_zone_skipped_total")
                   .Help("Calendar jobs a tick query skipped because their time zone is missing from this node's "
                         "tz database: each such job in the query's shards, once per tick query (so about the "
                         "number of such jobs per minute). The zones are logged once each and listed by /readyz.")
                   .Register(registry)
                   .Add({})),
      time_zones_(time_zones) {}

void UnknownZoneSkips::OnSkipped(std::string_view zone, int64_t jobs) {
  if (jobs <= 0) return;
  skipped_.Increment(static_cast<double>(jobs));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!zones_.emplace(zone).second) return;
  }
  spdlog::warn(
      "time zone '{}' is not in this node's tz database (version '{}'): its calendar jobs ({} in the shard just "
      "fired) are skipped by this node's ticks and their slots are lost here; give this node a tzdata that has "
      "it (see belfry_calendar_jobs_unknown_zone_skipped_total and /readyz)",
      zone, time_zones_.Version(), jobs);
}

std::vector<std::string> UnknownZoneSkips::zones() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {zones_.begin(), zones_.end()};
}

}  // namespace belfry
