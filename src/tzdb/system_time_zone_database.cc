#include "tzdb/system_time_zone_database.h"

#include <date/date.h>
#include <date/tz.h>
// ptz.h's time_zone::name() says `hh_mm_ss` under both `using namespace date` and `using namespace
// std::chrono`, which C++20's <chrono> makes ambiguous (GCC 12): a name only date has stands in.
namespace date {
template <class Duration>
using belfry_hh_mm_ss = hh_mm_ss<Duration>;
}  // namespace date
#define hh_mm_ss belfry_hh_mm_ss
#include <date/ptz.h>
#undef hh_mm_ss

#include <chrono>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>

namespace belfry {
namespace {

constexpr char kZoneInfoDir[] = "/usr/share/zoneinfo/";

// Whether the calendar code takes a period that ends at `end` as never ending: the first whole
// minute at or after it is past year 9999 (kFarMinute of core/calendar_schedule.cc).
bool EndsNever(int64_t end) {
  constexpr int64_t kFarMinute = 5'000'000'000;
  return end > (kFarMinute - 1) * 60;
}

// The rules after a zone's last explicit transition. A TZif file lists transitions up to 2037 and
// ends with a POSIX TZ string ("EST5EDT,M3.2.0,M11.1.0") for every later year; the date library's
// OS-tzdb reader stops at the list, so without this every zone would keep its 2037 offset
// forever. nullopt when the zone has no rules there (a fixed offset) or no footer.
using FooterRules = std::optional<Posix::time_zone>;

FooterRules ReadFooterRules(const std::string& zone_name) {
  std::ifstream file(kZoneInfoDir + zone_name, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (data.size() < 6 || data.compare(0, 4, "TZif") != 0 || data[4] < '2' || data.back() != '\n')
    return std::nullopt;
  const size_t start = data.rfind('\n', data.size() - 2);
  if (start == std::string::npos) return std::nullopt;
  const std::string footer = data.substr(start + 1, data.size() - start - 2);
  if (footer.find(',') == std::string::npos) return std::nullopt;  // no DST rules: the last offset holds
  try {
    return Posix::time_zone(footer);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

OffsetPeriod PeriodOf(const date::sys_info& info) {
  OffsetPeriod p;
  p.begin = info.begin.time_since_epoch().count();
  p.end = info.end.time_since_epoch().count();
  p.offset_seconds = static_cast<int32_t>(info.offset.count());
  return p;
}

// A date/tz zone, continued past its last listed transition by its footer.
class SystemTimeZone final : public TimeZone {
 public:
  SystemTimeZone(const date::time_zone* zone, FooterRules footer) : zone_(zone), footer_(std::move(footer)) {}

  OffsetPeriod PeriodAt(int64_t utc_seconds) const override {
    const date::sys_seconds t{std::chrono::seconds(utc_seconds)};
    date::sys_info info = zone_->get_info(t);
    if (!EndsNever(info.end.time_since_epoch().count()) || !footer_) return PeriodOf(info);
    date::sys_info later = footer_->get_info(t);
    if (later.begin < info.begin) later.begin = info.begin;  // the listed transitions rule before
    return PeriodOf(later);
  }

 private:
  const date::time_zone* const zone_;
  const FooterRules footer_;
};

}  // namespace

SystemTimeZoneDatabase::SystemTimeZoneDatabase() = default;
SystemTimeZoneDatabase::~SystemTimeZoneDatabase() = default;

const TimeZone* SystemTimeZoneDatabase::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = zones_.find(std::string(name)); it != zones_.end()) return it->second.get();
  const date::time_zone* zone = nullptr;
  try {
    zone = date::locate_zone(name);
    zone->get_info(date::sys_seconds{});  // date/tz reads a zone's file on its first use: now, not later
  } catch (const std::exception&) {
    return nullptr;
  }
  auto owned = std::make_unique<const SystemTimeZone>(zone, ReadFooterRules(std::string(zone->name())));
  const TimeZone* found = owned.get();
  zones_.emplace(std::string(name), std::move(owned));
  return found;
}

std::string SystemTimeZoneDatabase::Version() const {
  // With USE_OS_TZDB the library reports "unknown"; Debian's tzdata names its version in the
  // first line of tzdata.zi ("# version 2025b").
  std::string version;
  try {
    version = date::get_tzdb().version;
  } catch (const std::exception&) {
  }
  if (!version.empty() && version != "unknown") return version;
  std::ifstream zi(std::string(kZoneInfoDir) + "tzdata.zi");
  std::string line;
  if (std::getline(zi, line) && line.rfind("# version ", 0) == 0) return line.substr(10);
  return "unknown";
}

const TimeZoneDatabase& SystemTimeZones() {
  static const SystemTimeZoneDatabase* const database = new SystemTimeZoneDatabase();  // never freed
  return *database;
}

}  // namespace belfry
