// SystemTimeZoneDatabase over the host's /usr/share/zoneinfo (tzdata is installed wherever belfry
// runs; scripts/setup installs it).
#include "tzdb/system_time_zone_database.h"

#include <gtest/gtest.h>

#include <string>

#include "core/iso_time.h"

namespace belfry {
namespace {

int64_t Seconds(const char* iso) { return *ParseIsoTime(iso) / 1000; }

TEST(SystemTimeZoneDatabaseTest, FindsHostZonesOnceAndUnknownNamesNever) {
  SystemTimeZoneDatabase db;
  const TimeZone* berlin = db.Find("Europe/Berlin");
  ASSERT_NE(berlin, nullptr);
  EXPECT_EQ(db.Find("Europe/Berlin"), berlin) << "a zone is read once and kept";
  EXPECT_NE(db.Find("UTC"), nullptr);
  EXPECT_EQ(db.Find("Mars/Olympus_Mons"), nullptr);
  EXPECT_EQ(db.Find("../../etc/passwd"), nullptr);
  EXPECT_EQ(&SystemTimeZones(), &SystemTimeZones());
}

TEST(SystemTimeZoneDatabaseTest, PeriodsFollowTheListedTransitions) {
  SystemTimeZoneDatabase db;
  const TimeZone* berlin = db.Find("Europe/Berlin");
  ASSERT_NE(berlin, nullptr);
  const OffsetPeriod winter = berlin->PeriodAt(Seconds("2026-01-15T12:00:00Z"));
  EXPECT_EQ(winter.offset_seconds, 3600);
  EXPECT_EQ(winter.end, Seconds("2026-03-29T01:00:00Z"));
  const OffsetPeriod summer = berlin->PeriodAt(winter.end);
  EXPECT_EQ(summer.begin, winter.end) << "periods meet";
  EXPECT_EQ(summer.offset_seconds, 7200);
  EXPECT_EQ(summer.end, Seconds("2026-10-25T01:00:00Z"));
  EXPECT_EQ(berlin->PeriodAt(summer.begin - 1).end, summer.begin);
}

TEST(SystemTimeZoneDatabaseTest, TheFooterRulesAfterTheLastListedTransition) {
  // TZif files list transitions up to 2037; the POSIX TZ footer rules every later year.
  SystemTimeZoneDatabase db;
  const TimeZone* new_york = db.Find("America/New_York");
  ASSERT_NE(new_york, nullptr);
  EXPECT_EQ(new_york->PeriodAt(Seconds("2099-07-01T00:00:00Z")).offset_seconds, -4 * 3600);
  EXPECT_EQ(new_york->PeriodAt(Seconds("2099-01-01T00:00:00Z")).offset_seconds, -5 * 3600);
  // A zone without DST keeps its last offset for ever.
  const OffsetPeriod tokyo = db.Find("Asia/Tokyo")->PeriodAt(Seconds("2099-07-01T00:00:00Z"));
  EXPECT_EQ(tokyo.offset_seconds, 9 * 3600);
  EXPECT_GT(tokyo.end, int64_t{253'402'300'800});  // 10000-01-01T00:00:00Z
}

TEST(SystemTimeZoneDatabaseTest, NamesItsVersion) {
  const std::string version = SystemTimeZoneDatabase().Version();
  EXPECT_FALSE(version.empty());
}

}  // namespace
}  // namespace belfry
