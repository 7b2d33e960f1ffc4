#include "core/cron_expression.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace belfry {
namespace {

// The values set in a bit set, as a string "0,5,10" (empty for none).
template <size_t N>
std::string Values(const std::bitset<N>& bits) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (!bits[i]) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(i);
  }
  return out;
}

CronExpression MustParse(std::string_view text) {
  const StatusOr<CronExpression> cron = ParseCronExpression(text);
  EXPECT_TRUE(cron.ok()) << text << ": " << (cron.ok() ? "" : cron.status().ToString());
  return cron.ok() ? cron.value() : CronExpression{};
}

std::string Range(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

TEST(CronExpressionTest, AllStars) {
  const CronExpression cron = MustParse("* * * * *");
  EXPECT_EQ(Values(cron.minutes), Range(0, 59));
  EXPECT_EQ(Values(cron.hours), Range(0, 23));
  EXPECT_EQ(Values(cron.days_of_month), Range(1, 31));
  EXPECT_EQ(Values(cron.months), Range(1, 12));
  EXPECT_EQ(Values(cron.days_of_week), Range(0, 6));
  EXPECT_TRUE(cron.dom_star);
  EXPECT_TRUE(cron.dow_star);
  EXPECT_TRUE(cron.hour_star);
  EXPECT_EQ(cron.normalized, "* * * * *");
}

// One field's text (in the position given by `field`, the others "*") and the values it sets.
struct FieldCase {
  int field;  // 0 minute, 1 hour, 2 day-of-month, 3 month, 4 day-of-week
  const char* text;
  std::string values;
};

std::string Values(const CronExpression& cron, int field) {
  switch (field) {
    case 0:
      return Values(cron.minutes);
    case 1:
      return Values(cron.hours);
    case 2:
      return Values(cron.days_of_month);
    case 3:
      return Values(cron.months);
    default:
      return Values(cron.days_of_week);
  }
}

std::string WithField(int field, std::string_view text) {
  std::string out;
  for (int f = 0; f < 5; ++f) {
    if (f > 0) out += ' ';
    out += f == field ? std::string(text) : "*";
  }
  return out;
}

TEST(CronExpressionTest, FieldSyntax) {
  const FieldCase cases[] = {
      // Numbers, lists, ranges, steps.
      {0, "0", "0"},
      {0, "59", "59"},
      {0, "007", "7"},
      {0, "1,2,3", "1,2,3"},
      {0, "3,1,3", "1,3"},
      {0, "10-15", "10,11,12,13,14,15"},
      {0, "5-5", "5"},
      {0, "*/15", "0,15,30,45"},
      {0, "*/60", "0"},
      {0, "*/59", "0,59"},
      {0, "*/1", Range(0, 59)},
      {0, "10-30/10", "10,20,30"},
      {0, "10-31/10", "10,20,30"},
      {0, "50/3", "50,53,56,59"},
      {0, "58/60", "58"},
      {0, "0-4,*/20,59", "0,1,2,3,4,20,40,59"},
      {1, "23", "23"},
      {1, "9-17", "9,10,11,12,13,14,15,16,17"},
      {1, "*/6", "0,6,12,18"},
      {1, "*/24", "0"},
      {2, "1", "1"},
      {2, "31", "31"},
      {2, "*/10", "1,11,21,31"},
      {2, "1-31/15", "1,16,31"},
      {2, "*/31", "1"},
      // Months: numbers and names.
      {3, "1", "1"},
      {3, "12", "12"},
      {3, "JAN", "1"},
      {3, "dec", "12"},
      {3, "Jun,Aug", "6,8"},
      {3, "JAN-MAR", "1,2,3"},
      {3, "JAN-MAR/2", "1,3"},
      {3, "jan-dec/3", "1,4,7,10"},
      {3, "FEB/5", "2,7,12"},
      {3, "3-DEC/4", "3,7,11"},
      {3, "*/12", "1"},
      // Days of week: numbers, names, 7 = Sunday.
      {4, "0", "0"},
      {4, "7", "0"},
      {4, "0,7", "0"},
      {4, "SUN", "0"},
      {4, "sat", "6"},
      {4, "MON-FRI", "1,2,3,4,5"},
      {4, "mon-fri/2", "1,3,5"},
      {4, "5-7", "0,5,6"},
      {4, "FRI-7", "0,5,6"},
      {4, "0-7", Range(0, 6)},
      {4, "7-7", "0"},
      {4, "*/2", "0,2,4,6"},
      {4, "*/7", "0"},
      {4, "1/2", "1,3,5"},
      {4, "7/3", "0"},
      {4, "MON,WED,FRI", "1,3,5"},
      {4, "SUN-SAT", Range(0, 6)},
  };
  for (const FieldCase& c : cases) {
    const std::string text = WithField(c.field, c.text);
    EXPECT_EQ(Values(MustParse(text), c.field), c.values) << text;
  }
}

TEST(CronExpressionTest, Flags) {
  struct Case {
    const char* text;
    bool hour_star;
    bool dom_star;
    bool dow_star;
  };
  const Case cases[] = {
      {"* * * * *", true, true, true},         {"0 9 * * 1-5", false, true, false},
      {"0 */2 * * *", false, true, true},      {"0 0-23 * * *", false, true, true},
      {"0 *,1 * * *", false, true, true},      {"0 0 1 * *", false, false, true},
      {"0 0 */2 * *", false, true, true},      {"0 0 *,15 * MON", false, true, false},
      {"0 0 1-31 * 0-7", false, false, false}, {"0 0 15 * */2", false, false, true},
      {"0 * 1 * MON", true, false, false},
  };
  for (const Case& c : cases) {
    const CronExpression cron = MustParse(c.text);
    EXPECT_EQ(cron.hour_star, c.hour_star) << c.text;
    EXPECT_EQ(cron.dom_star, c.dom_star) << c.text;
    EXPECT_EQ(cron.dow_star, c.dow_star) << c.text;
  }
}

TEST(CronExpressionTest, Normalization) {
  struct Case {
    const char* text;
    const char* normalized;
  };
  const Case cases[] = {
      {"0 9 * * 1-5", "0 9 * * 1-5"},
      {"  0   9\t*\t\t* 1-5  ", "0 9 * * 1-5"},
      {"\t0 0 1 jan Mon-fri\t", "0 0 1 jan Mon-fri"},
      {"007 09 * * *", "007 09 * * *"},
  };
  for (const Case& c : cases) EXPECT_EQ(MustParse(c.text).normalized, c.normalized) << c.text;
}

TEST(CronExpressionTest, Macros) {
  struct Case {
    const char* text;
    const char* expansion;
  };
  const Case cases[] = {
      {"@yearly", "0 0 1 1 *"},      {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"},      {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"},      {"@DAILY", "0 0 * * *"},    {"@Hourly", "0 * * * *"},
      {"  @weekly\t ", "0 0 * * 0"},
  };
  for (const Case& c : cases) {
    const CronExpression cron = MustParse(c.text);
    EXPECT_EQ(cron.normalized, c.expansion) << c.text;
    EXPECT_EQ(cron, MustParse(c.expansion)) << c.text;
  }
  EXPECT_TRUE(MustParse("@hourly").hour_star);
  EXPECT_FALSE(MustParse("@daily").hour_star);
  EXPECT_TRUE(MustParse("@weekly").dom_star);
  EXPECT_FALSE(MustParse("@weekly").dow_star);
  EXPECT_FALSE(MustParse("@monthly").dom_star);
}

TEST(CronExpressionTest, NormalizedReparsesToTheSameExpression) {
  for (const char* text :
       {"0 9 * * 1-5", " 1,2  3-4/1 */5\tJAN-MAR/2 5-7 ", "@yearly", "@HOURLY", "0 0 1 1 0"}) {
    const CronExpression cron = MustParse(text);
    EXPECT_EQ(MustParse(cron.normalized), cron) << text;
  }
}

TEST(CronExpressionTest, DayMatchesAndWhenEitherFieldIsAStar) {
  // 15th of the month, Mondays only when the day-of-month is a star.
  const CronExpression dom_only = MustParse("0 0 15 * *");
  EXPECT_TRUE(CronDayMatches(dom_only, 3, 15, 2));
  EXPECT_FALSE(CronDayMatches(dom_only, 3, 16, 2));
  const CronExpression dow_only = MustParse("0 0 * * MON");
  EXPECT_TRUE(CronDayMatches(dow_only, 3, 16, 1));
  EXPECT_FALSE(CronDayMatches(dow_only, 3, 16, 2));
  // "*/2" begins with a star: AND, although it restricts the days.
  const CronExpression star_step = MustParse("0 0 */2 * MON");
  EXPECT_TRUE(CronDayMatches(star_step, 3, 3, 1));
  EXPECT_FALSE(CronDayMatches(star_step, 3, 4, 1));
  EXPECT_FALSE(CronDayMatches(star_step, 3, 3, 2));
  const CronExpression dow_star_step = MustParse("0 0 13 * */7");
  EXPECT_TRUE(CronDayMatches(dow_star_step, 3, 13, 0));
  EXPECT_FALSE(CronDayMatches(dow_star_step, 3, 13, 5));
  EXPECT_FALSE(CronDayMatches(dow_star_step, 3, 14, 0));
}

TEST(CronExpressionTest, DayMatchesOrWhenBothFieldsAreRestricted) {
  // Friday the 13th in Vixie cron: every 13th and every Friday.
  const CronExpression cron = MustParse("0 0 13 * FRI");
  EXPECT_TRUE(CronDayMatches(cron, 1, 13, 5));
  EXPECT_TRUE(CronDayMatches(cron, 1, 13, 2));
  EXPECT_TRUE(CronDayMatches(cron, 1, 20, 5));
  EXPECT_FALSE(CronDayMatches(cron, 1, 20, 4));
  // A full range is not a star: still OR.
  const CronExpression full = MustParse("0 0 1-31 * MON");
  EXPECT_TRUE(CronDayMatches(full, 1, 20, 4));
}

TEST(CronExpressionTest, DayMatchesNeedsTheMonth) {
  for (const char* text : {"0 0 13 JUN FRI", "0 0 * 6 *", "0 0 13 6 *", "0 0 * 6 FRI"}) {
    const CronExpression cron = MustParse(text);
    EXPECT_FALSE(CronDayMatches(cron, 5, 13, 5)) << text;
    EXPECT_TRUE(CronDayMatches(cron, 6, 13, 5)) << text;
  }
}

TEST(CronExpressionTest, CanEverMatch) {
  struct Case {
    const char* text;
    bool can;
  };
  const Case cases[] = {
      {"* * * * *", true},
      {"0 0 30 2 *", false},
      {"0 0 31 2 *", false},
      {"0 0 30,31 2 *", false},
      {"0 0 29 2 *", true},
      {"0 0 29 2 */7", true},  // Feb 29 on a Sunday: rare, but it happens
      {"0 0 31 4 *", false},
      {"0 0 31 4,6 *", false},
      {"0 0 31 APR,JUN,SEP,NOV *", false},
      {"0 0 31 4,5 *", true},
      {"0 0 31 * *", true},
      {"0 0 30 2 MON", true},  // both restricted: OR, every Monday in February
      {"0 0 31 4 1-5", true},
      {"0 0 30 2 */2", false},  // "*/2" is a star: AND
      {"0 0 */30 2 *", true},   // 1 and 31: February 1st
      {"0 0 30-31 FEB *", false},
      {"0 0 29-31 FEB *", true},
      {"@yearly", true},
      {"0 0 31 11 *", false},
      {"0 0 31 12 *", true},
  };
  for (const Case& c : cases) EXPECT_EQ(CronCanEverMatch(MustParse(c.text)), c.can) << c.text;
}

// A rejected text, the field its message names ("" for none) and the position it names (0 for none).
struct RejectCase {
  std::string text;
  const char* field;
  int position;
};

TEST(CronExpressionTest, Rejections) {
  const RejectCase cases[] = {
      // Field count.
      {"", "", 0},
      {"   \t ", "", 0},
      {"* * * *", "", 0},
      {"*", "", 0},
      {"* * * * * *", "", 0},
      {"0 0 * * * /bin/true", "", 0},
      // Values out of range.
      {"60 * * * *", "minute", 1},
      {"0 25 * * *", "hour", 3},
      {"0 24 * * *", "hour", 3},
      {"0 0 0 * *", "day-of-month", 5},
      {"0 0 32 * *", "day-of-month", 5},
      {"0 0 * 0 *", "month", 7},
      {"0 0 * 13 *", "month", 7},
      {"0 0 * * 8", "day-of-week", 9},
      {"99999999999999999999 * * * *", "minute", 1},
      {"0 0 * * 1-99999999999999999999", "day-of-week", 11},
      {"0,60 * * * *", "minute", 3},
      {"0-60 * * * *", "minute", 3},
      // Syntax.
      {"-1 * * * *", "minute", 1},
      {"1- * * * *", "minute", 3},
      {"1-/2 * * * *", "minute", 3},
      {"*/ * * * *", "minute", 3},
      {"*/x * * * *", "minute", 3},
      {",, * * * *", "minute", 1},
      {"1,,2 * * * *", "minute", 3},
      {"1, * * * *", "minute", 3},
      {",1 * * * *", "minute", 1},
      {"*-5 * * * *", "minute", 2},
      {"5* * * * *", "minute", 2},
      {"1-2-3 * * * *", "minute", 4},
      {"*/2/3 * * * *", "minute", 4},
      {"? * * * *", "minute", 1},
      {"0 0 L * *", "day-of-month", 5},
      {"0 0 15W * *", "day-of-month", 7},
      {"0 0 * * 5#3", "day-of-week", 10},
      {"0 0 * * +1", "day-of-week", 9},
      {"1.5 * * * *", "minute", 2},
      // Steps.
      {"5/0 * * * *", "minute", 3},
      {"*/0 * * * *", "minute", 3},
      {"*/00 * * * *", "minute", 3},
      {"*/61 * * * *", "minute", 3},
      {"0 */25 * * *", "hour", 5},
      {"0 0 */32 * *", "day-of-month", 7},
      {"0 0 * */13 *", "month", 9},
      {"0 0 * * */8", "day-of-week", 11},
      {"*/99999999999999999999 * * * *", "minute", 3},
      // Reversed ranges.
      {"5-1 * * * *", "minute", 1},
      {"0 0 * DEC-JAN *", "month", 7},
      {"0 0 * * FRI-MON", "day-of-week", 9},
      {"0 0 * * 7-1", "day-of-week", 9},
      // Names.
      {"0 0 * * MONDAY", "day-of-week", 9},
      {"0 0 * * XYZ", "day-of-week", 9},
      {"0 0 * JANUARY *", "month", 7},
      {"0 0 * MON *", "month", 7},
      {"0 0 * * JAN", "day-of-week", 9},
      {"0 MON * * *", "hour", 3},
      {"0 0 * * */MON", "day-of-week", 11},
      // Characters.
      {std::string("0 0 * * *\n"), "day-of-week", 10},
      {std::string("0\0 0 * * *", 10), "minute", 2},
      {"0 0 * * \xc3\xa9", "day-of-week", 9},
      {"0 0 \xff * *", "day-of-month", 5},
      {"0 0\xc2\xa0* * *", "hour", 4},
      {"0 0 * * *\r", "day-of-week", 10},
      {"0 0 * * * \x7f", "", 11},
      // Macros.
      {"@reboot", "", 1},
      {"@", "", 1},
      {"@daily 5", "", 8},
      {"@daily * * * * *", "", 8},
      {" @yearly x", "", 10},
      {"@every 5m", "", 1},
      {"@daily\n", "", 7},
      {"0 @daily * * *", "hour", 3},
      // Length.
      {std::string(257, '1'), "", 0},
      {"0 0 * * *" + std::string(248, ' '), "", 0},
  };
  for (const RejectCase& c : cases) {
    const StatusOr<CronExpression> cron = ParseCronExpression(c.text);
    ASSERT_FALSE(cron.ok()) << c.text << " parsed as " << cron->normalized;
    const Status& status = cron.status();
    EXPECT_EQ(status.code(), Status::Code::kInvalid) << c.text;
    EXPECT_EQ(status.reason(), "invalid_cron") << c.text;
    const std::string& message = status.message();
    EXPECT_EQ(message.rfind("cron \"", 0), 0u) << message;
    if (*c.field != '\0') {
      EXPECT_NE(
          message.find(std::string(c.field) + " field at position " + std::to_string(c.position) + ": "),
          std::string::npos)
          << c.text << " -> " << message;
    } else {
      EXPECT_EQ(message.find(" field at position "), std::string::npos) << c.text << " -> " << message;
      if (c.position > 0) {
        EXPECT_NE(message.find("at position " + std::to_string(c.position) + ": "), std::string::npos)
            << c.text << " -> " << message;
      }
    }
    for (char ch : message) {
      const auto b = static_cast<unsigned char>(ch);
      EXPECT_TRUE(b >= 0x20 && b != 0x7f) << c.text << " -> " << message;
    }
  }
}

TEST(CronExpressionTest, MessagesInFull) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"0 25 * * *", R"(cron "0 25 * * *": hour field at position 3: 25 is outside 0-23)"},
      {"* * * *",
       R"(cron "* * * *": found 4 fields, expected 5 (minute hour day-of-month month day-of-week))"},
      {"* * * * * *",
       R"(cron "* * * * * *": found 6 fields, expected 5 (minute hour day-of-month month day-of-week); )"
       R"(the extra text starts at position 11)"},
      {"", R"(cron "": found 0 fields, expected 5 (minute hour day-of-month month day-of-week))"},
      {"99999999999999999999 * * * *", R"(cron "99999999999999999999 * * * *": minute field at position 1: )"
                                       R"(a 20-digit number is outside 0-59)"},
      {"5/0 * * * *", R"(cron "5/0 * * * *": minute field at position 3: step 0 is not allowed)"},
      {"0 */25 * * *", R"(cron "0 */25 * * *": hour field at position 5: )"
                       R"(step 25 is larger than the field's span (24 values))"},
      {"0 0 * * FRI-MON",
       R"(cron "0 0 * * FRI-MON": day-of-week field at position 9: range "FRI-MON" is reversed )"
       R"((write the smaller value first))"},
      {"0 0 * * MONDAY", R"(cron "0 0 * * MONDAY": day-of-week field at position 9: unknown name "MONDAY" )"
                         R"((day-of-week takes 0-7 or SUN-SAT))"},
      {"1, * * * *", R"(cron "1, * * * *": minute field at position 3: empty list item)"},
      {"1- * * * *", R"(cron "1- * * * *": minute field at position 3: missing the end of the range)"},
      {"*/ * * * *", R"(cron "*/ * * * *": minute field at position 3: missing the step after '/')"},
      {"0 0 * * *\n",
       R"(cron "0 0 * * *\x0a": day-of-week field at position 10: control character "\x0a" is not allowed)"},
      {"0 0 * * \xc3\xa9",
       "cron \"0 0 * * \xc3\xa9\": day-of-week field at position 9: non-ASCII character \"\xc3\xa9\" is not "
       "allowed"},
      {"@reboot",
       R"(cron "@reboot": at position 1: unknown macro "@reboot" (known: @yearly, @annually, @monthly, )"
       R"(@weekly, @daily, @midnight, @hourly))"},
      {"@daily 5", R"(cron "@daily 5": at position 8: unexpected text after @daily (a macro stands alone))"},
  };
  for (const Case& c : cases) {
    const StatusOr<CronExpression> cron = ParseCronExpression(c.text);
    ASSERT_FALSE(cron.ok()) << c.text;
    EXPECT_EQ(cron.status().message(), c.message);
  }
}

TEST(CronExpressionTest, LongTextIsQuotedInPart) {
  const std::string text(300, '1');
  const StatusOr<CronExpression> cron = ParseCronExpression(text);
  ASSERT_FALSE(cron.ok());
  EXPECT_EQ(cron.status().message(),
            "cron \"" + std::string(100, '1') + "\"... (300 bytes): 300 bytes, at most 256 allowed");
}

TEST(CronExpressionTest, AcceptsTheLongestText) {
  const std::string text = "0 0 * * *" + std::string(247, ' ');
  ASSERT_EQ(text.size(), 256u);
  EXPECT_EQ(MustParse(text).normalized, "0 0 * * *");
}

TEST(CronExpressionTest, NeverCrashesOnAnyShortInput) {
  // Every string of up to 3 bytes over an alphabet of the parser's special characters.
  const std::string alphabet = std::string("0179*/-,@ \tMx\n\xff") + std::string(1, '\0');
  int parsed = 0;
  std::string text;
  for (char a : alphabet) {
    for (char b : alphabet) {
      for (char c : alphabet) {
        for (const std::string& t : {std::string{a}, std::string{a, b}, std::string{a, b, c}}) {
          const std::string five = t + " " + t + " " + t + " " + t + " " + t;
          for (const std::string& input : {t, five}) {
            const StatusOr<CronExpression> cron = ParseCronExpression(input);
            if (cron.ok()) {
              ++parsed;
              EXPECT_EQ(MustParse(cron->normalized), cron.value());
            } else {
              EXPECT_EQ(cron.status().reason(), "invalid_cron");
            }
          }
        }
      }
    }
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace belfry
