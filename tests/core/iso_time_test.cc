#include "core/iso_time.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

namespace belfry {
namespace {

constexpr EpochMs kDayMs = 86'400'000;

TEST(IsoTimeTest, EpochBoundary) {
  EXPECT_EQ(ParseIsoTime("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseIsoTime("1970-01-01T00:00:00.001Z"), 1);
  EXPECT_EQ(ParseIsoTime("1970-01-02T00:00:00Z"), kDayMs);
  EXPECT_EQ(FormatIsoTime(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatIsoTime(1), "1970-01-01T00:00:00.001Z");
  EXPECT_EQ(ParseIsoTime("1969-12-31T23:59:59Z"), std::nullopt);
}

TEST(IsoTimeTest, KnownInstants) {
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:00:00Z"), 1'795'352'400'000);
  EXPECT_EQ(ParseIsoTime("2000-02-29T23:59:59Z"), 951'868'799'000);
  EXPECT_EQ(ParseIsoTime("2024-02-29T00:00:00Z"), 1'709'164'800'000);
  EXPECT_EQ(ParseIsoTime("2100-03-01T00:00:00Z"), 4'107'542'400'000);
  EXPECT_EQ(ParseIsoTime("9999-12-31T23:59:59Z"), 253'402'300'799'000);
  EXPECT_EQ(ParseIsoTime("2038-01-19T03:14:08Z"), 2'147'483'648'000);  // past 32-bit time_t
}

TEST(IsoTimeTest, LeapYears) {
  EXPECT_TRUE(ParseIsoTime("2024-02-29T00:00:00Z").has_value());   // divisible by 4
  EXPECT_TRUE(ParseIsoTime("2000-02-29T00:00:00Z").has_value());   // divisible by 400
  EXPECT_FALSE(ParseIsoTime("2100-02-29T00:00:00Z").has_value());  // divisible by 100 only
  EXPECT_FALSE(ParseIsoTime("2026-02-29T00:00:00Z").has_value());
  EXPECT_EQ(*ParseIsoTime("2024-03-01T00:00:00Z") - *ParseIsoTime("2024-02-28T00:00:00Z"), 2 * kDayMs);
  EXPECT_EQ(*ParseIsoTime("2023-03-01T00:00:00Z") - *ParseIsoTime("2023-02-28T00:00:00Z"), kDayMs);
  EXPECT_EQ(*ParseIsoTime("2025-01-01T00:00:00Z") - *ParseIsoTime("2024-01-01T00:00:00Z"), 366 * kDayMs);
}

TEST(IsoTimeTest, MonthLengths) {
  const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  for (int m = 1; m <= 12; ++m) {
    char ok[32], bad[32];
    std::snprintf(ok, sizeof ok, "2026-%02d-%02dT00:00:00Z", m, days[m - 1]);
    std::snprintf(bad, sizeof bad, "2026-%02d-%02dT00:00:00Z", m, days[m - 1] + 1);
    EXPECT_TRUE(ParseIsoTime(ok).has_value()) << ok;
    EXPECT_FALSE(ParseIsoTime(bad).has_value()) << bad;
  }
}

TEST(IsoTimeTest, Fractions) {
  const EpochMs base = *ParseIsoTime("2026-11-22T13:37:32Z");
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:37:32.5Z"), base + 500);
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:37:32.05Z"), base + 50);
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:37:32.500Z"), base + 500);
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:37:32.123456789Z"), base + 123);  // truncated, not rounded
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:37:32.999999Z"), base + 999);
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:37:32.1234567890Z"), std::nullopt);  // 10 digits
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:37:32.Z"), std::nullopt);
}

TEST(IsoTimeTest, ZoneOffsets) {
  const EpochMs utc = *ParseIsoTime("2026-11-22T13:00:00Z");
  EXPECT_EQ(ParseIsoTime("2026-11-22T14:00:00+01:00"), utc);
  EXPECT_EQ(ParseIsoTime("2026-11-22T07:30:00-05:30"), utc);
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:00:00+00:00"), utc);
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:00:00-00:00"), utc);
  EXPECT_EQ(ParseIsoTime("2026-11-23T00:45:00+11:45"), utc);  // crosses a day boundary
  EXPECT_EQ(ParseIsoTime("2026-11-22T13:00:00"), utc);        // no designator: UTC
  EXPECT_EQ(ParseIsoTime("2026-11-22 13:00:00Z"), utc);
  EXPECT_EQ(ParseIsoTime("2026-11-22t13:00:00z"), utc);
}

TEST(IsoTimeTest, InstantMustBeInRangeAfterTheZone) {
  // The range is of instants, 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z: a zone that
  // moves an in-range date outside it is rejected, so everything accepted formats back to text
  // that parses to the same instant (the fuzzer found "9999-12-31T23:59:59-01:00", which
  // formatted as "10000-01-01T00:59:59.000Z").
  EXPECT_EQ(ParseIsoTime("1970-01-01T00:00:00+01:00"), std::nullopt);
  EXPECT_EQ(ParseIsoTime("1970-01-01T00:59:59.999+01:00"), std::nullopt);
  EXPECT_EQ(ParseIsoTime("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(ParseIsoTime("9999-12-31T23:59:59-01:00"), std::nullopt);
  EXPECT_EQ(ParseIsoTime("9999-12-31T23:00:00-01:00"), std::nullopt);
  EXPECT_EQ(ParseIsoTime("9999-12-31T22:59:59.999-01:00"), 253'402'300'799'999);
  EXPECT_EQ(ParseIsoTime("9999-12-31T23:59:59.999+01:00"), 253'402'297'199'999);
  for (const char* text : {"1970-01-01T01:00:00+01:00", "9999-12-31T22:59:59.999-01:00",
                           "9999-12-31T23:59:59-00:00", "1970-01-01T00:00:00-23:59"}) {
    const auto ms = ParseIsoTime(text);
    ASSERT_TRUE(ms.has_value()) << text;
    EXPECT_EQ(ParseIsoTime(FormatIsoTime(*ms)), ms) << text;
  }
}

TEST(IsoTimeTest, RejectsMalformed) {
  for (const char* bad : {"",
                          "2026",
                          "2026-11-22",
                          "2026-11-22T",
                          "2026-11-22T13:00",
                          "2026-11-22T13:00:00ZZ",
                          "2026-11-22T13:00:00 ",
                          " 2026-11-22T13:00:00Z",
                          "2026-13-01T00:00:00Z",
                          "2026-00-10T00:00:00Z",
                          "2026-01-00T00:00:00Z",
                          "2026-01-32T00:00:00Z",
                          "2026-01-01T24:00:00Z",
                          "2026-01-01T23:60:00Z",
                          "2026-01-01T23:59:60Z",
                          "2026-1-01T00:00:00Z",
                          "2026-01-01T0:00:00Z",
                          "+2026-01-01T00:00:00Z",
                          "20260101T000000Z",
                          "2026-01-01T00:00:00+0100",
                          "2026-01-01T00:00:00+01",
                          "2026-01-01T00:00:00+24:00",
                          "2026-01-01T00:00:00+01:60",
                          "2026-01-01X00:00:00Z",
                          "2026/01/01T00:00:00Z",
                          "10000-01-01T00:00:00Z",
                          "0000-01-01T00:00:00Z",
                          "2026-01-01T00:00:00.-1Z",
                          "2026-01-01T00:00:00UTC",
                          "next tuesday",
                          "2026-0a-01T00:00:00Z",
                          "2026-01-01T00:00:00Z\n"}) {
    EXPECT_EQ(ParseIsoTime(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseIsoTime(std::string_view("2026-01-01T00:00:00Z\0", 21)), std::nullopt);
}

TEST(IsoTimeTest, Format) {
  EXPECT_EQ(FormatIsoTime(1'795'352'400'000), "2026-11-22T13:00:00.000Z");
  EXPECT_EQ(FormatIsoTime(1'795'353'452'500), "2026-11-22T13:17:32.500Z");
  EXPECT_EQ(FormatIsoTime(951'868'799'999), "2000-02-29T23:59:59.999Z");
  EXPECT_EQ(FormatIsoTime(253'402'300'799'999), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIsoTime(-1), "1969-12-31T23:59:59.999Z");
}

TEST(IsoTimeTest, RoundTrip) {
  // Every day from 1970 to past 2400, at a time with milliseconds, survives Format then Parse.
  for (EpochMs ms = 12'345'678; ms < 13'600'000'000'000; ms += kDayMs + 3'601'001) {
    const std::string text = FormatIsoTime(ms);
    ASSERT_EQ(ParseIsoTime(text), ms) << text;
  }
}

TEST(IsoTimeTest, FormatOfParseIsCanonical) {
  EXPECT_EQ(FormatIsoTime(*ParseIsoTime("2026-11-22T14:07:00.12+01:00")), "2026-11-22T13:07:00.120Z");
}

// The allocation-free formatter against an independent calendar (std::chrono's), over random
// instants from 1970 to 9999 and the edges of its fast path.
std::string ChronoIso(EpochMs ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> tp{milliseconds(ms)};
  const sys_days day = floor<days>(tp);
  const year_month_day ymd(day);
  const hh_mm_ss<milliseconds> hms(tp - day);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count(), hms.subseconds().count());
}

TEST(IsoTimeTest, FormatMatchesChronoCalendar) {
  constexpr EpochMs kYear10000 = 253'402'300'800'000;  // 10000-01-01T00:00:00Z
  std::mt19937_64 rng(20261122);
  std::uniform_int_distribution<EpochMs> any_ms(0, kYear10000 - 1);
  for (int i = 0; i < 200'000; ++i) {
    const EpochMs ms = any_ms(rng);
    const std::string expected = ChronoIso(ms);
    ASSERT_EQ(FormatIsoTime(ms), expected) << ms;
    std::string appended = "prefix";
    AppendIsoTime(ms, &appended);
    ASSERT_EQ(appended, "prefix" + expected) << ms;
  }
  EXPECT_EQ(FormatIsoTime(kYear10000 - 1), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIsoTime(kYear10000), "10000-01-01T00:00:00.000Z");  // outside the fast path
  EXPECT_EQ(FormatIsoTime(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIsoTime(-1), ChronoIso(-1));
}

}  // namespace
}  // namespace belfry
