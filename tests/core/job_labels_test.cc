// Job labels (core/job_labels.h): the rules, the canonical form, filters and containment.
#include "core/job_labels.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace belfry {
namespace {

Status Parse(const std::string& json, std::string* out) {
  simdjson::dom::parser parser;
  simdjson::dom::element el;
  EXPECT_EQ(parser.parse(json).get(el), simdjson::SUCCESS) << json;
  return ParseLabels(el, out);
}

TEST(JobLabelsTest, CanonicalFormSortsKeysAndMinifies) {
  std::string out;
  ASSERT_TRUE(Parse(R"({ "team" : "tracking", "carrier": "acme", "a.b/c-d_e": "" })", &out).ok());
  EXPECT_EQ(out, R"({"a.b/c-d_e":"","carrier":"acme","team":"tracking"})");
  ASSERT_TRUE(Parse("{}", &out).ok());
  EXPECT_EQ(out, "{}");
  ASSERT_TRUE(Parse(R"({"k":"ünïcode \"quoted\""})", &out).ok());
  EXPECT_EQ(out, R"({"k":"ünïcode \"quoted\""})");
}

TEST(JobLabelsTest, RejectsWhatTheRulesForbid) {
  std::string out;
  std::string many = "{";
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":\"v\"";
  many += "}";
  for (const std::string bad : {
           std::string(R"(["team"])"),                                     // not an object
           std::string(R"({"team":1})"),                                   // not a string
           std::string(R"({"":"x"})"),                                     // empty key
           std::string(R"({"-team":"x"})"),                                // must begin with a letter or digit
           std::string(R"({"team.":"x"})"),                                // and end with one
           std::string(R"({"te am":"x"})"),                                // a space
           "{\"" + std::string(64, 'k') + "\":\"x\"}",                     // a 64-byte key
           "{\"k\":\"" + std::string(256, 'v') + "\"}",                    // a 256-byte value
           std::string(R"({"k":"line\nbreak"})"),                          // a control character
           std::string(R"({"k":"a","k":"b"})"),                            // a key twice
           many,                                                           // 17 labels
       }) {
    const Status s = Parse(bad, &out);
    EXPECT_EQ(s.reason(), "invalid_labels") << bad;
  }
  EXPECT_TRUE(Parse("{\"" + std::string(63, 'k') + "\":\"" + std::string(255, 'v') + "\"}", &out).ok());
}

TEST(JobLabelsTest, FiltersAreKeyValueTermsInTheSameForm) {
  std::string out;
  ASSERT_TRUE(ParseLabelFilter({"team=tracking", "carrier=acme", "carrier=acme"}, &out).ok());
  EXPECT_EQ(out, R"({"carrier":"acme","team":"tracking"})");
  ASSERT_TRUE(ParseLabelFilter({"empty="}, &out).ok());
  EXPECT_EQ(out, R"({"empty":""})");
  ASSERT_TRUE(ParseLabelFilter({"expr=a=b"}, &out).ok()) << "the first = splits";
  EXPECT_EQ(out, R"({"expr":"a=b"})");
  EXPECT_EQ(ParseLabelFilter({"team"}, &out).reason(), "invalid_labels");
  EXPECT_EQ(ParseLabelFilter({"=x"}, &out).reason(), "invalid_labels");
  EXPECT_EQ(ParseLabelFilter({"team=a", "team=b"}, &out).reason(), "invalid_labels");
}

TEST(JobLabelsTest, ContainmentLikePostgres) {
  const std::string labels = R"({"carrier":"acme","team":"tracking"})";
  EXPECT_TRUE(LabelsContain(labels, R"({"team":"tracking"})"));
  EXPECT_TRUE(LabelsContain(labels, labels));
  EXPECT_TRUE(LabelsContain(labels, "{}"));
  EXPECT_TRUE(LabelsContain("", "{}"));
  EXPECT_FALSE(LabelsContain(labels, R"({"team":"billing"})"));
  EXPECT_FALSE(LabelsContain(labels, R"({"team":"tracking","region":"eu"})"));
  EXPECT_FALSE(LabelsContain("", R"({"team":"tracking"})"));
}

}  // namespace
}  // namespace belfry
