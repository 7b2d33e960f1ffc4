#include "core/calendar_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "belfry/config.h"
#include "core/iso_time.h"
#include "core/slot_math.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

int64_t Minute(const char* iso) { return EpochMinuteOf(*ParseIsoTime(iso)); }

CronExpression Cron(const char* text) {
  StatusOr<CronExpression> c = ParseCronExpression(text);
  EXPECT_TRUE(c.ok()) << text;
  return c.ok() ? *c : CronExpression{};
}

const TimeZone* Zone(const char* name) {
  StatusOr<const TimeZone*> z = LocateTimeZone(SystemTimeZones(), name);
  EXPECT_TRUE(z.ok()) << name;
  return *z;
}

// Fires in [from, to) as ISO strings with their marks ("2026-03-08T07:00:00.000Z moved_from_gap").
std::vector<std::string> Fires(const char* cron, const char* zone, const char* from, const char* to) {
  std::vector<std::string> out;
  for (const CalendarFire& f :
       NextCalendarFires(Cron(cron), Zone(zone), Minute(from) - 1, 1000, Minute(to))) {
    std::string s = FormatIsoTime(f.utc_minute * kMsPerMinute);
    if (f.mark != CalendarFire::Mark::kNone) s += std::string(" ") + CalendarMarkName(f.mark);
    out.push_back(s);
  }
  return out;
}

using V = std::vector<std::string>;

TEST(CalendarScheduleTest, WallTimeInASpringForwardGapFiresOnceAtTheFirstMinuteAfterIt) {
  // America/New_York, 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00Z.
  EXPECT_EQ(
      Fires("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
      (V{"2026-03-07T07:30:00.000Z", "2026-03-08T07:00:00.000Z moved_from_gap", "2026-03-09T06:30:00.000Z"}));
  // Two matching times in the gap, and 03:00 itself: one fire.
  EXPECT_EQ(Fires("0,30 2,3 * * *", "America/New_York", "2026-03-08T00:00:00Z", "2026-03-08T12:00:00Z"),
            (V{"2026-03-08T07:00:00.000Z merged_in_gap", "2026-03-08T07:30:00.000Z"}));
  // 03:00 alone is an ordinary fire.
  EXPECT_EQ(Fires("0 3 * * *", "America/New_York", "2026-03-08T00:00:00Z", "2026-03-08T12:00:00Z"),
            (V{"2026-03-08T07:00:00.000Z"}));
}

TEST(CalendarScheduleTest, WallTimeRepeatedByFallBackFiresAtItsFirstOccurrenceOnly) {
  // America/New_York, 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00Z; 01:00-01:59 happen twice.
  EXPECT_EQ(Fires("30 1 * * *", "America/New_York", "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"),
            (V{"2026-11-01T05:30:00.000Z first_of_repeated"}));
  EXPECT_EQ(Fires("30 2 * * *", "America/New_York", "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"),
            (V{"2026-11-01T07:30:00.000Z"}));
}

TEST(CalendarScheduleTest, HourStarFiresByRealTime) {
  // Both 01:30s of the fall-back day, and nothing moved out of the spring-forward gap.
  EXPECT_EQ(Fires("*/30 * * * *", "America/New_York", "2026-11-01T05:00:00Z", "2026-11-01T07:01:00Z"),
            (V{"2026-11-01T05:00:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-01T06:00:00.000Z repeated",
               "2026-11-01T06:30:00.000Z repeated", "2026-11-01T07:00:00.000Z"}));
  EXPECT_EQ(Fires("30 * * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T09:00:00Z"),
            (V{"2026-03-08T05:30:00.000Z", "2026-03-08T06:30:00.000Z", "2026-03-08T07:30:00.000Z",
               "2026-03-08T08:30:00.000Z"}));
}

TEST(CalendarScheduleTest, HalfHourDstAndQuarterHourOffsets) {
  // Australia/Lord_Howe: +10:30 standard, +11:00 summer; 2026-10-04 02:00 -> 02:30 (15:30Z on the 3rd).
  // 02:15 local on the 4th is in the gap: it fires at 02:30 +11:00; on the 5th, 02:15 +11:00.
  EXPECT_EQ(Fires("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", "2026-10-05T00:00:00Z"),
            (V{"2026-10-03T15:30:00.000Z moved_from_gap", "2026-10-04T15:15:00.000Z"}));
  const std::vector<CalendarFire> f =
      NextCalendarFires(Cron("15 2 * * *"), Zone("Australia/Lord_Howe"), Minute("2026-10-03T16:00:00Z"), 1);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FormatIsoTime(f[0].utc_minute * kMsPerMinute), "2026-10-04T15:15:00.000Z");
  // 2026-04-05 02:00 +11 -> 01:30 +10:30 (15:00Z on the 4th): 01:45 happens twice, fires once.
  EXPECT_EQ(Fires("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z", "2026-04-05T00:00:00Z"),
            (V{"2026-04-04T14:45:00.000Z first_of_repeated"}));
  // Asia/Kathmandu, +05:45 all year.
  EXPECT_EQ(Fires("0 9 * * *", "Asia/Kathmandu", "2026-06-01T00:00:00Z", "2026-06-03T00:00:00Z"),
            (V{"2026-06-01T03:15:00.000Z", "2026-06-02T03:15:00.000Z"}));
}

TEST(CalendarScheduleTest, YearsPastTheListedTransitionsFollowTheZonesRules) {
  // TZif files list transitions to 2037 only; later years come from the file's POSIX TZ footer.
  EXPECT_EQ(Fires("30 2 * * *", "America/New_York", "2099-03-07T00:00:00Z", "2099-03-09T00:00:00Z"),
            (V{"2099-03-07T07:30:00.000Z", "2099-03-08T07:00:00.000Z moved_from_gap"}));
  EXPECT_EQ(UtcOffsetMinutes(Zone("America/New_York"), Minute("2099-07-01T00:00:00Z")), -240);
  EXPECT_EQ(UtcOffsetMinutes(Zone("Australia/Lord_Howe"), Minute("2199-01-01T00:00:00Z")), 660);
  EXPECT_EQ(UtcOffsetMinutes(Zone("Australia/Lord_Howe"), Minute("2199-07-01T00:00:00Z")), 630);
  EXPECT_EQ(UtcOffsetMinutes(Zone("Europe/Dublin"), Minute("9999-07-01T00:00:00Z")), 60);
  EXPECT_EQ(UtcOffsetMinutes(Zone("Asia/Tokyo"), Minute("9999-07-01T00:00:00Z")), 540);
}

TEST(CalendarScheduleTest, DayRulesUseTheLocalDate) {
  // 00:30 on Mondays in Asia/Tokyo (+09:00) is Sunday 15:30Z.
  EXPECT_EQ(Fires("30 0 * * MON", "Asia/Tokyo", "2026-11-22T00:00:00Z", "2026-11-30T00:00:00Z"),
            (V{"2026-11-22T15:30:00.000Z", "2026-11-29T15:30:00.000Z"}));
  // Vixie OR: the 1st of the month or a Friday.
  EXPECT_EQ(Fires("0 12 1 * FRI", "UTC", "2026-11-25T00:00:00Z", "2026-12-06T00:00:00Z"),
            (V{"2026-11-27T12:00:00.000Z", "2026-12-01T12:00:00.000Z", "2026-12-04T12:00:00.000Z"}));
  // Feb 29: the next one after 2026 is 2028.
  EXPECT_EQ(Fires("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", "2030-01-01T00:00:00Z"),
            (V{"2028-02-29T00:00:00.000Z"}));
}

TEST(CalendarScheduleTest, FixedIntervalsInFixedZonesBecomeIntervalJobs) {
  const SchedulerConfig cfg;
  const EpochMs now = *ParseIsoTime("2026-11-25T00:00:00Z");
  auto as_interval = [&](const char* cron, const char* zone) {
    return CalendarAsInterval(Cron(cron), Zone(zone), now, cfg.intervals);
  };
  ASSERT_TRUE(as_interval("*/15 * * * *", "UTC"));
  EXPECT_EQ(as_interval("*/15 * * * *", "UTC")->interval_minutes, 15);
  EXPECT_EQ(as_interval("*/15 * * * *", "UTC")->offset_minutes, 0);
  // Asia/Tokyo, +09:00 without DST: local 00:00, 06:00, ... = 15:00Z, 21:00Z, ...; 900 mod 360 = 180.
  ASSERT_TRUE(as_interval("0 */6 * * *", "Asia/Tokyo"));
  EXPECT_EQ(as_interval("0 */6 * * *", "Asia/Tokyo")->interval_minutes, 360);
  EXPECT_EQ(as_interval("0 */6 * * *", "Asia/Tokyo")->offset_minutes, 180);
  // Asia/Kathmandu 09:00 = 03:15Z.
  ASSERT_TRUE(as_interval("0 9 * * *", "Asia/Kathmandu"));
  EXPECT_EQ(as_interval("0 9 * * *", "Asia/Kathmandu")->offset_minutes, 195);
  EXPECT_FALSE(as_interval("*/15 * * * *", "Europe/Berlin"));  // DST ahead
  EXPECT_FALSE(as_interval("*/7 * * * *", "UTC"));             // not a whole-day progression
  EXPECT_FALSE(as_interval("*/4 * * * *", "UTC"));             // 4 is not a configured interval
  EXPECT_FALSE(as_interval("0 9 * * MON-FRI", "UTC"));         // not every day
  EXPECT_FALSE(as_interval("0 9,10 * * *", "UTC"));            // not evenly spaced
  // The equivalent interval job fires exactly when the cron job does.
  for (const char* zone : {"UTC", "Asia/Tokyo", "Asia/Kathmandu", "Asia/Kolkata"}) {
    for (const char* cron : {"*/15 * * * *", "0 */6 * * *", "0 9 * * *", "30 */2 * * *", "5 * * * *"}) {
      const std::optional<IntervalEquivalent> eq = as_interval(cron, zone);
      ASSERT_TRUE(eq) << cron << " " << zone;
      const int64_t from = EpochMinuteOf(now);
      for (int64_t m = from; m < from + 3 * 1440; ++m) {
        ASSERT_EQ(IsDueInMinute(eq->interval_minutes, eq->offset_minutes, m),
                  CronFiresAt(Cron(cron), Zone(zone), m))
            << cron << " " << zone << " " << FormatIsoTime(m * kMsPerMinute);
      }
    }
  }
}

// The tick query's rule, evaluated here over plain values: a job fires at a minute iff some term
// of the minute has one of its codes as key and passes its hour and day masks.
bool TermsFind(const CalendarSlots& slots, int32_t zone_id, const std::vector<CalendarTerm>& terms) {
  for (const CalendarTerm& t : terms) {
    const int64_t code = t.key - zone_id * kCronKeyStride;
    if (t.key / kCronKeyStride != zone_id) continue;
    if (std::find(slots.codes.begin(), slots.codes.end(), code) == slots.codes.end()) continue;
    const bool dom = (slots.dom_mask & t.dom_bit) != 0, dow = (slots.dow_mask & t.dow_bit) != 0;
    if ((slots.hour_mask & t.hour_bit) != 0 && (slots.month_mask & t.month_bit) != 0 &&
        (slots.day_or ? (dom || dow) : (dom && dow))) {
      return true;
    }
  }
  return false;
}

TEST(CalendarScheduleTest, TickTermsAgreeWithTheRuleAcrossTransitions) {
  const char* zones[] = {"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago",
                         "Pacific/Chatham",  "Europe/Dublin", "Asia/Kathmandu"};
  const char* crons[] = {"30 2 * * *", "0,30 1,2,3 * * *", "*/30 * * * *", "0 0 * * *",     "59 23 * * *",
                         "15 2 * * 0", "45 1 1-7 * SUN",   "0 * * * *",    "*/7 0-4 * * *", "30 0 1 * *"};
  // Two days around each zone's 2026 transitions, found by scanning for offset changes.
  std::vector<ZoneEntry> entries;
  for (int i = 0; i < static_cast<int>(std::size(zones)); ++i) entries.push_back({i + 1, Zone(zones[i])});
  const int64_t year_start = Minute("2026-01-01T00:00:00Z");
  std::set<int64_t> minutes;
  for (const ZoneEntry& z : entries) {
    for (int64_t m = year_start; m < year_start + 366 * 1440; m += 30) {
      if (UtcOffsetMinutes(z.zone, m) != UtcOffsetMinutes(z.zone, m + 30)) {
        for (int64_t k = m - 1440; k < m + 1440; ++k) minutes.insert(k);
      }
    }
  }
  ASSERT_GT(minutes.size(), 5u * 2880u);
  int64_t fires = 0;
  for (int64_t m : minutes) {
    std::vector<CalendarTerm> terms;
    AppendCalendarTerms(entries, m, &terms);
    for (const ZoneEntry& z : entries) {
      for (const char* text : crons) {
        const CronExpression cron = Cron(text);
        const bool rule = CronFiresAt(cron, z.zone, m);
        fires += rule ? 1 : 0;
        ASSERT_EQ(TermsFind(CalendarSlotsFor(cron), z.id, terms), rule)
            << text << " in zone " << z.id << " at " << FormatIsoTime(m * kMsPerMinute);
      }
    }
  }
  EXPECT_GT(fires, 1000);
}

TEST(CalendarScheduleTest, PreviewAgreesWithTheRule) {
  for (const char* zone : {"America/New_York", "Australia/Lord_Howe", "Europe/Dublin"}) {
    for (const char* text : {"30 2 * * *", "*/20 * * * *", "0 9 * * MON-FRI", "15 1,2 1 * *"}) {
      const CronExpression cron = Cron(text);
      const int64_t from = Minute("2026-03-01T00:00:00Z");
      std::vector<int64_t> brute;
      for (int64_t m = from; m < from + 60 * 1440; ++m) {
        if (CronFiresAt(cron, Zone(zone), m)) brute.push_back(m);
      }
      std::vector<int64_t> next;
      for (const CalendarFire& f : NextCalendarFires(cron, Zone(zone), from - 1, 100000, from + 60 * 1440)) {
        next.push_back(f.utc_minute);
      }
      EXPECT_EQ(next, brute) << text << " in " << zone;
    }
  }
}

TEST(CalendarScheduleTest, PlanRejectsBadZonesAndSchedulesThatNeverFire) {
  const SchedulerConfig cfg;
  const EpochMs now = *ParseIsoTime("2026-11-25T00:00:00Z");
  JobSpec spec;
  Status st = PlanCalendarJob(SystemTimeZones(), "0 9 * * *", "Mars/Olympus_Mons", now, cfg.intervals, &spec);
  EXPECT_EQ(st.reason(), "invalid_time_zone");
  EXPECT_NE(st.message().find("Mars/Olympus_Mons"), std::string::npos) << st.message();
  EXPECT_EQ(PlanCalendarJob(SystemTimeZones(), "0 0 31 4,6 *", "UTC", now, cfg.intervals, &spec).reason(),
            "cron_never_fires");
  spec.start_at = *ParseIsoTime("2027-03-01T00:00:00Z");
  spec.end_at = *ParseIsoTime("2028-02-01T00:00:00Z");
  EXPECT_EQ(PlanCalendarJob(SystemTimeZones(), "0 0 29 2 *", "UTC", now, cfg.intervals, &spec).reason(),
            "cron_never_fires");
  spec.end_at = *ParseIsoTime("2028-03-01T00:00:00Z");
  ASSERT_TRUE(PlanCalendarJob(SystemTimeZones(), "0 0 29 2 *", "UTC", now, cfg.intervals, &spec).ok());
  ASSERT_TRUE(spec.calendar);
  EXPECT_FALSE(spec.calendar->as_interval);
  EXPECT_EQ(spec.calendar->slots.codes, std::vector<int32_t>{0});
  EXPECT_EQ(spec.interval_minutes, 0);
  // Previews start from the job's own start and stop at its end.
  spec.shard = 2;
  const std::vector<EpochMs> next = NextJobTriggerTimes(SystemTimeZones(), spec, 500, now, 5);
  EXPECT_EQ(next, std::vector<EpochMs>{*ParseIsoTime("2028-02-29T00:00:01Z")});
}

TEST(CalendarScheduleTest, NextFiresJsonShowsLocalTimesAndMarks) {
  const SchedulerConfig cfg;
  JobSpec spec;
  ASSERT_TRUE(
      PlanCalendarJob(SystemTimeZones(), "30 2 * * *", "America/New_York", 0, cfg.intervals, &spec).ok());
  spec.shard = 0;
  EXPECT_EQ(
      EncodeNextFires(
          NextFires(SystemTimeZones(), spec, false, 500, *ParseIsoTime("2026-03-07T12:00:00Z"), 2)),
      R"([{"at":"2026-03-08T07:00:00.000Z","local":"2026-03-08T03:00:00-04:00","dst":"moved_from_gap"},)"
      R"({"at":"2026-03-09T06:30:00.000Z","local":"2026-03-09T02:30:00-04:00","dst":null}])");
  EXPECT_EQ(EncodeNextFires(NextFires(SystemTimeZones(), spec, true, 500, 0, 2)), "[]");
  EXPECT_EQ(FormatLocalTime(Minute("2026-06-01T03:15:00Z") + 345, 345), "2026-06-01T09:00:00+05:45");
}

}  // namespace
}  // namespace belfry
