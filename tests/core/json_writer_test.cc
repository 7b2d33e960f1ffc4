#include "core/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace belfry {
namespace {

std::string Quoted(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(Quoted("plain"), R"("plain")");
  EXPECT_EQ(Quoted(R"(a "b" \c)"), R"("a \"b\" \\c")");
  EXPECT_EQ(Quoted("\n\r\t"), R"("\n\r\t")");
  EXPECT_EQ(Quoted(std::string_view("\0\x01\x1f", 3)), R"("\u0000\u0001\u001f")");
}

TEST(JsonWriterTest, KeepsWellFormedUtf8) {
  EXPECT_EQ(Quoted("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x94"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x94\"");
}

TEST(JsonWriterTest, ReplacesEachMalformedUtf8Byte) {
  EXPECT_EQ(Quoted("a\xff"
                   "b"),
            R"("a\ufffdb")");
  EXPECT_EQ(Quoted("\xe2\x82"), R"("\ufffd\ufffd")");            // cut sequence
  EXPECT_EQ(Quoted("\xc0\xaf"), R"("\ufffd\ufffd")");            // overlong
  EXPECT_EQ(Quoted("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");  // surrogate
  EXPECT_EQ(Quoted("\xe2\x82\xac\x80"), "\"\xe2\x82\xac\\ufffd\"");
}

std::string Number(double v) {
  std::string out;
  AppendJsonNumber(&out, v);
  return out;
}

TEST(JsonWriterTest, WritesNumbersAsNlohmannJsonDoes) {
  EXPECT_EQ(Number(0.0), "0.0");
  EXPECT_EQ(Number(-0.0), "-0.0");
  EXPECT_EQ(Number(249.75), "249.75");
  EXPECT_EQ(Number(5.0), "5.0");
  EXPECT_EQ(Number(100000.0), "100000.0");
  EXPECT_EQ(Number(0.001), "0.001");
  EXPECT_EQ(Number(1e20), "1e+20");
  EXPECT_EQ(Number(1.5e-7), "1.5e-07");
  EXPECT_EQ(Number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(Number(std::nan("")), "null");
  // The shard view's lags are milliseconds / 1000; and a spread of other magnitudes.
  for (int64_t ms = 0; ms < 5'000'000; ms += 997) {
    const double v = static_cast<double>(ms) / 1000.0;
    ASSERT_EQ(Number(v), nlohmann::json(v).dump()) << ms;
  }
  for (double v : {1.0 / 3, 2.0 / 3, 123456.789, 1e14, 1e15, 1e16, 123456789012345.6, 0.0001, 0.00012, 1e-5,
                   -42.5, 3.14159, 1e300, 1.7976931348623157e308}) {
    EXPECT_EQ(Number(v), nlohmann::json(v).dump()) << v;
  }
}

}  // namespace
}  // namespace belfry
