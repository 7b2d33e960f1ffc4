#include "core/interval_name.h"

#include <gtest/gtest.h>

namespace belfry {
namespace {

TEST(IntervalNameTest, KnownForms) {
  EXPECT_EQ(ParseExecutionInterval("EVERY_MINUTE"), 1);
  EXPECT_EQ(ParseExecutionInterval("EVERY_1_MINUTES"), 1);
  EXPECT_EQ(ParseExecutionInterval("EVERY_5_MINUTES"), 5);
  EXPECT_EQ(ParseExecutionInterval("EVERY_15_MINUTES"), 15);
  EXPECT_EQ(ParseExecutionInterval("EVERY_30_MINUTES"), 30);
  EXPECT_EQ(ParseExecutionInterval("EVERY_HOUR"), 60);
  EXPECT_EQ(ParseExecutionInterval("EVERY_1_HOURS"), 60);
  EXPECT_EQ(ParseExecutionInterval("EVERY_6_HOURS"), 360);
  EXPECT_EQ(ParseExecutionInterval("EVERY_24_HOURS"), 1440);
}

TEST(IntervalNameTest, DoesNotCheckTheConfiguredSet) {
  EXPECT_EQ(ParseExecutionInterval("EVERY_7_MINUTES"), 7);
  EXPECT_EQ(ParseExecutionInterval("EVERY_1441_MINUTES"), 1441);
  EXPECT_EQ(ParseExecutionInterval("EVERY_48_HOURS"), 2880);
}

TEST(IntervalNameTest, Limits) {
  EXPECT_EQ(ParseExecutionInterval("EVERY_999999999_MINUTES"), 999'999'999);
  EXPECT_EQ(ParseExecutionInterval("EVERY_35791394_HOURS"), 2'147'483'640);
  EXPECT_EQ(ParseExecutionInterval("EVERY_35791395_HOURS"), std::nullopt);  // > INT32_MAX minutes
  EXPECT_EQ(ParseExecutionInterval("EVERY_999999999_HOURS"), std::nullopt);
  EXPECT_EQ(ParseExecutionInterval("EVERY_2147483648_MINUTES"), std::nullopt);
  EXPECT_EQ(ParseExecutionInterval("EVERY_99999999999999999999999_MINUTES"), std::nullopt);
}

TEST(IntervalNameTest, RejectsEverythingElse) {
  for (const char* bad : {"",
                          "EVERY_",
                          "EVERY",
                          "FOO",
                          "every_minute",
                          "Every_Minute",
                          "EVERY_MINUTES",
                          "EVERY_HOURS",
                          "EVERY_0_MINUTES",
                          "EVERY_00_MINUTES",
                          "EVERY_05_MINUTES",
                          "EVERY_-5_MINUTES",
                          "EVERY_+5_MINUTES",
                          "EVERY_5_MINUTE",
                          "EVERY_2_HOUR",
                          "EVERY_5",
                          "EVERY_5_",
                          "EVERY_5_DAYS",
                          "EVERY_5_MINUTES ",
                          " EVERY_5_MINUTES",
                          "EVERY__5_MINUTES",
                          "EVERY_5__MINUTES",
                          "EVERY_1.5_HOURS",
                          "EVERY_MINUTEX",
                          "EVERY_HOURLY",
                          "EVERY_DAY",
                          "EVERY_0_HOURS",
                          "EVERY_\xd9\xa5_MINUTES"}) {
    EXPECT_EQ(ParseExecutionInterval(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseExecutionInterval(std::string_view("EVERY_5_MINUTES\0", 16)), std::nullopt);
}

}  // namespace
}  // namespace belfry
