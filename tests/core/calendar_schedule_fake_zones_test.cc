// The calendar code over an in-memory TimeZoneDatabase: it computes with whatever zones it is
// given and reads nothing itself (core/time_zone_database.h). The host's zones are exercised in
// calendar_schedule_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "belfry/config.h"
#include "core/calendar_schedule.h"
#include "core/iso_time.h"
#include "core/slot_math.h"
#include "fakes/fake_time_zone_database.h"

namespace belfry {
namespace {

int64_t Seconds(const char* iso) { return *ParseIsoTime(iso) / 1000; }
int64_t Minute(const char* iso) { return EpochMinuteOf(*ParseIsoTime(iso)); }

CronExpression Cron(const char* text) {
  StatusOr<CronExpression> c = ParseCronExpression(text);
  EXPECT_TRUE(c.ok()) << text;
  return c.ok() ? *c : CronExpression{};
}

// +01:00, then +02:00 from 2026-03-29T01:00Z (local 02:00..02:59 skipped) and +01:00 again from
// 2026-10-25T01:00Z (local 02:00..02:59 twice): Central European rules for one year. Test/Fixed
// is +05:30 for ever.
FakeTimeZoneDatabase Zones() {
  FakeTimeZoneDatabase db("fake-2099z");
  db.Add("Test/Central", 3600,
         {{Seconds("2026-03-29T01:00:00Z"), 7200}, {Seconds("2026-10-25T01:00:00Z"), 3600}});
  db.Add("Test/Fixed", 19800);
  return db;
}

struct Fire {
  std::string at;
  std::string mark;
  bool operator==(const Fire&) const = default;
};

std::vector<Fire> Fires(const TimeZoneDatabase& db, const char* cron, const char* zone, const char* from,
                        int n) {
  std::vector<Fire> out;
  for (const CalendarFire& f :
       NextCalendarFires(Cron(cron), *LocateTimeZone(db, zone), Minute(from) - 1, n)) {
    out.push_back({FormatIsoTime(f.utc_minute * kMsPerMinute), CalendarMarkName(f.mark)});
  }
  return out;
}

TEST(CalendarScheduleFakeZonesTest, LocatesOnlyTheDatabasesZones) {
  const FakeTimeZoneDatabase db = Zones();
  StatusOr<const TimeZone*> found = LocateTimeZone(db, "Test/Fixed");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, db.Find("Test/Fixed"));
  const Status missing = LocateTimeZone(db, "Europe/Berlin").status();
  EXPECT_EQ(missing.reason(), "invalid_time_zone");
  EXPECT_NE(missing.message().find("\"Europe/Berlin\""), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("tzdata fake-2099z"), std::string::npos) << missing.message();
  EXPECT_EQ(LocateTimeZone(db, "").status().reason(), "invalid_time_zone");
}

TEST(CalendarScheduleFakeZonesTest, SpringForwardGapMovesTheFire) {
  const FakeTimeZoneDatabase db = Zones();
  EXPECT_EQ(
      Fires(db, "30 2 * * *", "Test/Central", "2026-03-28T12:00:00Z", 2),
      (std::vector<Fire>{{"2026-03-29T01:00:00.000Z", "moved_from_gap"}, {"2026-03-30T00:30:00.000Z", ""}}));
}

TEST(CalendarScheduleFakeZonesTest, FallBackRepeatFiresOnceByWallTimeAndTwiceByRealTime) {
  const FakeTimeZoneDatabase db = Zones();
  EXPECT_EQ(Fires(db, "30 2 * * *", "Test/Central", "2026-10-24T12:00:00Z", 2),
            (std::vector<Fire>{{"2026-10-25T00:30:00.000Z", "first_of_repeated"},
                               {"2026-10-26T01:30:00.000Z", ""}}));
  EXPECT_EQ(Fires(db, "30 * * * *", "Test/Central", "2026-10-25T00:00:00Z", 2),
            (std::vector<Fire>{{"2026-10-25T00:30:00.000Z", ""}, {"2026-10-25T01:30:00.000Z", "repeated"}}));
}

TEST(CalendarScheduleFakeZonesTest, PlansByTheGivenZones) {
  const FakeTimeZoneDatabase db = Zones();
  const SchedulerConfig cfg;
  const EpochMs now = *ParseIsoTime("2026-01-10T00:00:00Z");
  JobSpec fixed;
  ASSERT_TRUE(PlanCalendarJob(db, "0 * * * *", "Test/Fixed", now, cfg.intervals, &fixed).ok());
  ASSERT_TRUE(fixed.calendar);
  EXPECT_TRUE(fixed.calendar->as_interval);
  EXPECT_EQ(fixed.interval_minutes, 60);
  EXPECT_EQ(fixed.offset_minutes, 30);  // local :00 at +05:30 is UTC :30
  JobSpec central;
  ASSERT_TRUE(PlanCalendarJob(db, "0 * * * *", "Test/Central", now, cfg.intervals, &central).ok());
  EXPECT_FALSE(central.calendar->as_interval) << "an offset change lies ahead";
  EXPECT_EQ(PlanCalendarJob(db, "0 * * * *", "UTC", now, cfg.intervals, &central).reason(),
            "invalid_time_zone");
}

TEST(CalendarScheduleFakeZonesTest, PreviewsComeFromTheGivenZones) {
  const FakeTimeZoneDatabase db = Zones();
  const SchedulerConfig cfg;
  JobSpec spec;
  ASSERT_TRUE(PlanCalendarJob(db, "30 2 * * *", "Test/Central", 0, cfg.intervals, &spec).ok());
  spec.shard = 0;
  EXPECT_EQ(
      EncodeNextFires(NextFires(db, spec, false, 500, *ParseIsoTime("2026-03-28T12:00:00Z"), 1)),
      R"([{"at":"2026-03-29T01:00:00.000Z","local":"2026-03-29T03:00:00+02:00","dst":"moved_from_gap"}])");
  EXPECT_EQ(NextJobTriggerTimes(db, spec, 500, *ParseIsoTime("2026-03-28T12:00:00Z"), 1),
            std::vector<EpochMs>{*ParseIsoTime("2026-03-29T01:00:00Z")});
  // A database without the job's zone previews nothing, as a node without it fires nothing.
  EXPECT_TRUE(NextFires(FakeTimeZoneDatabase(), spec, false, 500, 0, 3).empty());
}

}  // namespace
}  // namespace belfry
