// The rules every JSON object message shares (commands and execution reports read through it).
#include "core/json_object_fields.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

namespace belfry {
namespace {

constexpr std::array<std::string_view, 3> kNames = {"name", "count", "extra"};
constexpr JsonObjectSchema kSchema = {"thing", kNames, 1000};

Status Reject(std::string_view value) {
  const StatusOr<JsonObjectFields> r = JsonObjectFields::Parse(value, kSchema);
  EXPECT_FALSE(r.ok()) << value;
  return r.ok() ? Status::Ok() : r.status();
}

std::string Nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(JsonObjectFieldsTest, FieldsByIndexWithNullAsAbsent) {
  const StatusOr<JsonObjectFields> r =
      JsonObjectFields::Parse(R"({"count":3,"name":"a","extra":null})", kSchema);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::optional<std::string_view> name;
  ASSERT_TRUE(r->GetString(0, &name).ok());
  EXPECT_EQ(name, "a");
  EXPECT_EQ(r->Get(1)->get_int64().value(), 3);
  EXPECT_FALSE(r->Get(2).has_value());
  std::optional<std::string_view> extra;
  EXPECT_TRUE(r->GetString(2, &extra).ok());
  EXPECT_FALSE(extra.has_value());
  const Status wrong = r->GetString(1, &name);
  EXPECT_EQ(wrong.reason(), "wrong_type");
  EXPECT_EQ(wrong.message(), "field \"count\" must be a string, not a number");
}

TEST(JsonObjectFieldsTest, RejectionsNameTheMessageAndTheRule) {
  EXPECT_EQ(Reject(std::string(1001, ' ')).message(), "thing is 1001 bytes; the limit is 1000");
  EXPECT_EQ(Reject("{\"name\":\"\xff\"}").message(),
            "thing value is not valid UTF-8 (first bad byte at offset 9)");
  EXPECT_EQ(Reject("").message(), "thing value is empty or only whitespace");
  EXPECT_EQ(Reject("{").reason(), "invalid_json");
  EXPECT_EQ(Reject(R"({"count":1e999})").reason(), "invalid_number");
  EXPECT_EQ(Reject("[]").message(), "thing must be a JSON object, not an array");
  const Status unknown = Reject(R"({"name":"a","Name":"b"})");
  EXPECT_EQ(unknown.reason(), "unknown_field");
  EXPECT_EQ(unknown.message(), "unknown field \"Name\" (known fields: name, count, extra)");
  const Status duplicate = Reject(R"({"extra":null,"extra":1})");
  EXPECT_EQ(duplicate.reason(), "duplicate_field");
  EXPECT_EQ(duplicate.message(), "field \"extra\" appears more than once");
}

TEST(JsonObjectFieldsTest, NestingIsLimitedToThirtyTwoLevels) {
  // The object is level 1.
  EXPECT_TRUE(JsonObjectFields::Parse("{\"extra\":" + Nested(31) + "}", kSchema).ok());
  for (const int levels : {32, 33, 400}) {
    const Status deep = Reject("{\"extra\":" + Nested(levels) + "}");
    EXPECT_EQ(deep.reason(), "too_deep") << levels;
    EXPECT_EQ(deep.message(), "JSON nesting is deeper than 32 levels");
  }
}

TEST(JsonObjectFieldsTest, DeepNestingBeyondSimdjsonsDefaultLimitIsTooDeep) {
  // simdjson's own default is 1024 levels; the limit holds however large the document.
  const JsonObjectSchema big = {"thing", kNames, 1 << 20};
  const StatusOr<JsonObjectFields> r = JsonObjectFields::Parse("{\"extra\":" + Nested(100'000) + "}", big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "too_deep");
}

}  // namespace
}  // namespace belfry
