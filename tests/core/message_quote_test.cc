#include "core/message_quote.h"

#include <gtest/gtest.h>

#include <string>

namespace belfry {
namespace {

TEST(MessageQuoteTest, EscapesControlCharactersAndQuotes) {
  EXPECT_EQ(QuoteForMessage("plain"), "\"plain\"");
  EXPECT_EQ(QuoteForMessage("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(QuoteForMessage(std::string("a\x01\x7f" "b\n", 5)), R"("a\x01\x7fb\x0a")");
  EXPECT_EQ(QuoteForMessage("\xc2\x85"), R"("\u0085")");  // C1 control (NEL)
  EXPECT_EQ(QuoteForMessage("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // well-formed UTF-8 stays
  EXPECT_EQ(QuoteForMessage("\xff" "a"), R"("\xffa")");        // malformed UTF-8 escaped
  EXPECT_EQ(QuoteForMessage(std::string("\0", 1)), R"("\x00")");
}

TEST(MessageQuoteTest, CutsAfterMaxBytesNeverInsideASequence) {
  EXPECT_EQ(QuoteForMessage("abcdef", 4), "\"abcd\"... (6 bytes)");
  // "é" is two bytes: with room for only one of them it is left out whole.
  EXPECT_EQ(QuoteForMessage("abc\xc3\xa9", 4), "\"abc\"... (5 bytes)");
  EXPECT_EQ(QuoteForMessage("abc\xc3\xa9", 5), "\"abc\xc3\xa9\"");
}

TEST(MessageQuoteTest, ExcerptKeepsQuotesAndEscapesControls) {
  EXPECT_EQ(ExcerptForMessage(R"({"a":1})", 40), R"({"a":1})");
  EXPECT_EQ(ExcerptForMessage("{\"a\x7f\":1}", 40), R"({"a\x7f":1})");
  EXPECT_EQ(ExcerptForMessage("abcdef", 3), "abc...");
  EXPECT_EQ(ExcerptForMessage("ab\xe2\x82\xac", 4), "ab...");  // the euro sign would not fit
}

TEST(MessageQuoteTest, Utf8Validation) {
  EXPECT_EQ(FirstInvalidUtf8("caf\xc3\xa9"), std::string::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\xc3"), 2u);           // truncated sequence
  EXPECT_EQ(FirstInvalidUtf8("a\xed\xa0\x80"), 1u);    // a UTF-16 surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xc0\xaf"), 0u);         // overlong
  EXPECT_EQ(Utf8SequenceLength("\xf0\x9f\x98\x80", 0), 4u);
}

}  // namespace
}  // namespace belfry
