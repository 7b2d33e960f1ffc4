// The bulk selector (core/bulk_selector.h) and the walk's positions (core/bulk_walk.h).
#include "core/bulk_selector.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

#include "core/bulk_walk.h"

namespace belfry {
namespace {

Status Parse(const std::string& json, BulkSelector* out) {
  simdjson::dom::parser parser;
  simdjson::dom::element el;
  EXPECT_EQ(parser.parse(json).get(el), simdjson::SUCCESS) << json;
  return ParseBulkSelector(el, out);
}

TEST(BulkSelectorTest, ParsesEncodesAndMatchesAsTheStoreDoes) {
  BulkSelector s;
  ASSERT_TRUE(Parse(R"({"labels":{"team":"a","env":"prod"},"owner":"fleet"})", &s).ok());
  EXPECT_EQ(s.owner, std::optional<std::string>("fleet"));
  EXPECT_EQ(s.labels_json, R"({"env":"prod","team":"a"})");
  EXPECT_EQ(EncodeBulkSelector(s), R"({"owner":"fleet","labels":{"env":"prod","team":"a"}})");
  EXPECT_TRUE(BulkSelectorMatches(s, "fleet", R"({"env":"prod","team":"a","x":"y"})"));
  EXPECT_FALSE(BulkSelectorMatches(s, "fleet", R"({"env":"prod"})")) << "every label must be there";
  EXPECT_FALSE(BulkSelectorMatches(s, "other", R"({"env":"prod","team":"a"})"));
  EXPECT_FALSE(BulkSelectorMatches(s, "fleet", ""));

  BulkSelector by_owner;
  ASSERT_TRUE(Parse(R"({"owner":"fleet","labels":{}})", &by_owner).ok());
  EXPECT_EQ(EncodeBulkSelector(by_owner), R"({"owner":"fleet"})");
  EXPECT_TRUE(BulkSelectorMatches(by_owner, "fleet", ""));

  BulkSelector by_label;
  ASSERT_TRUE(Parse(R"({"labels":{"q":"\"quoted\""}})", &by_label).ok());
  EXPECT_EQ(EncodeBulkSelector(by_label), R"({"labels":{"q":"\"quoted\""}})");
  EXPECT_TRUE(BulkSelectorMatches(by_label, "anyone", R"({"q":"\"quoted\""})"));
}

TEST(BulkSelectorTest, RefusesWhatWouldMatchEverythingOrIsNotASelector) {
  BulkSelector s;
  s.owner = "untouched";
  for (const char* bad : {"{}", R"({"labels":{}})", R"({"owner":""})", R"({"owner":null})", "[]", "7",
                          R"({"owner":"a","extra":1})"}) {
    const Status st = Parse(bad, &s);
    EXPECT_EQ(st.reason(), "invalid_selector") << bad << ": " << st.ToString();
  }
  EXPECT_EQ(Parse(R"({"owner":")" + std::string(256, 'o') + R"("})", &s).reason(), "invalid_owner");
  EXPECT_EQ(Parse(R"({"labels":{"a":1}})", &s).reason(), "invalid_labels");
  EXPECT_EQ(s.owner, std::optional<std::string>("untouched")) << "a refusal leaves the output alone";
}

TEST(BulkWalkTest, AFullPageStaysInItsShardAShortPageMovesOnAndTheLastShardFinishes) {
  BulkWalkPosition p = NextBulkWalkPosition(3, "job-9", 100, 100, 120);
  EXPECT_EQ(p.shard, 3);
  EXPECT_EQ(p.after_id, "job-9");
  EXPECT_FALSE(p.finished);
  p = NextBulkWalkPosition(3, "job-9", 99, 100, 120);
  EXPECT_EQ(p.shard, 4);
  EXPECT_EQ(p.after_id, "");
  EXPECT_FALSE(p.finished);
  p = NextBulkWalkPosition(3, "", 0, 100, 120);
  EXPECT_EQ(p.shard, 4);
  p = NextBulkWalkPosition(119, "z", 5, 100, 120);
  EXPECT_TRUE(p.finished);
  EXPECT_EQ(p.shard, 120);
  EXPECT_TRUE(NextBulkWalkShard(119, 120).finished);
  EXPECT_FALSE(NextBulkWalkShard(118, 120).finished);
}

}  // namespace
}  // namespace belfry
