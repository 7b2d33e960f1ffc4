#include "core/pagination.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base64url.h"

namespace belfry {
namespace {

TEST(PaginationTest, LimitsAreWholeIntegersWithinOneToMax) {
  EXPECT_EQ(*ParsePageLimit("1", 1000), 1);
  EXPECT_EQ(*ParsePageLimit("1000", 1000), 1000);
  for (const char* bad : {"", "0", "-1", "1001", "abc", "5x", " 5", "1.5", "99999999999999999999"}) {
    const StatusOr<int32_t> limit = ParsePageLimit(bad, 1000);
    ASSERT_FALSE(limit.ok()) << bad;
    EXPECT_EQ(limit.status().message(), std::string("limit must be an integer in 1..1000, got \"") + bad + "\"");
  }
  EXPECT_FALSE(ParsePageLimit("51", 50).ok());
  EXPECT_TRUE(CheckPageLimit(50, 50).ok());
  EXPECT_FALSE(CheckPageLimit(0, 50).ok());
  EXPECT_EQ(CheckPageLimit(51, 50).message(), "limit must be an integer in 1..50, got \"51\"");
}

TEST(PaginationTest, CursorsCarryThePositionAsBase64Url) {
  EXPECT_EQ(EncodePageCursor("job-42"), "am9iLTQy");
  EXPECT_EQ(EncodePageCursor("job-42"), Base64UrlEncode("job-42"));
  EXPECT_EQ(EncodePageCursor(""), "");  // the last page has none
  for (const std::string& position :
       std::vector<std::string>{"a", "shipment-43-poll", "1795871452500.0.failed", std::string("\xff\x00/", 3)}) {
    EXPECT_EQ(DecodePageCursor(EncodePageCursor(position)), position);
  }
}

TEST(PaginationTest, APrefixsUpperBoundFollowsEveryStringThatStartsWithIt) {
  EXPECT_EQ(PrefixUpperBound("abc"), "abd");
  EXPECT_EQ(PrefixUpperBound("team/"), "team0");
  EXPECT_EQ(PrefixUpperBound("a\x7f"), "a\xc2\x80");              // U+007F -> U+0080
  EXPECT_EQ(PrefixUpperBound("\xc3\xa9"), "\xc3\xaa");             // é -> ê
  EXPECT_EQ(PrefixUpperBound("\xed\x9f\xbf"), "\xee\x80\x80");     // U+D7FF -> U+E000, past the surrogates
  EXPECT_EQ(PrefixUpperBound("\xef\xbf\xbf"), "\xf0\x90\x80\x80"); // U+FFFF -> U+10000
  EXPECT_EQ(PrefixUpperBound("a\xf4\x8f\xbf\xbf"), "b");           // U+10FFFF has nothing above it
  EXPECT_EQ(PrefixUpperBound("\xf4\x8f\xbf\xbf"), "");
  EXPECT_EQ(PrefixUpperBound(""), "");
  // Every string with the prefix sorts below the bound, byte-wise.
  for (std::string_view p : {"abc", "a\x7f", "\xc3\xa9", "\xed\x9f\xbf", "a\xf4\x8f\xbf\xbf"}) {
    const std::string bound = PrefixUpperBound(p);
    for (std::string_view tail : {"", "\x01", "zzz", "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf"}) {
      EXPECT_LT(std::string(p) + std::string(tail), bound) << p;
    }
  }
}

TEST(PaginationTest, RejectsCursorsItDidNotMake) {
  for (const char* bad : {"%%%", "a", "am9iLTQy=", "a b", "+/"}) EXPECT_EQ(DecodePageCursor(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace belfry
