#include "core/json_writer.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace belfry
