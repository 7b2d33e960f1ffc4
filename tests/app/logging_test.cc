#include "app/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace belfry {
namespace {

using namespace std::string_literals;

class JsonLoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LogConfig cfg;
    cfg.format = "json";
    cfg.level = "trace";
    SetUpLogging(cfg, std::make_shared<spdlog::sinks::ostream_sink_st>(out_));
  }
  void TearDown() override { SetUpLogging(LogConfig{}); }  // the sink refers to out_

  std::vector<std::string> Lines() {
    spdlog::default_logger()->flush();
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  std::ostringstream out_;
};

TEST_F(JsonLoggingTest, EveryLineIsJsonAndTheMessageRoundTrips) {
  const std::vector<std::string> messages = {
      "plain",
      R"(ERROR:  relation "jobs" does not exist)",
      R"(C:\path\to "x" \" \\)",
      "two\nlines\r\nand\ta tab",
      "nul \0 bell \x07 esc \x1b unit \x1f del \x7f"s,
      "UTF-8 stays: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x94",
      "",
      R"({"msg":"injected","level":"critical"})",
  };
  for (const std::string& m : messages) spdlog::warn("{}", m);
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), messages.size()) << out_.str();
  for (size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    const nlohmann::json j = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded());
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j.at("msg").get<std::string>(), messages[i]);
    EXPECT_EQ(j.at("level").get<std::string>(), "warning");
    EXPECT_TRUE(j.at("thread").is_number_integer());
    EXPECT_TRUE(j.at("time").is_string());
    EXPECT_EQ(j.size(), 4u);
  }
}

TEST_F(JsonLoggingTest, MalformedUtf8BecomesReplacementCharacters) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"lone \xff byte", "lone \xef\xbf\xbd byte"},
      {"cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd"},
      {"overlong \xc0\xaf slash", "overlong \xef\xbf\xbd\xef\xbf\xbd slash"},
      {"surrogate \xed\xa0\x80!", "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!"},
      {"\x80\"quoted\"\x80", "\xef\xbf\xbd\"quoted\"\xef\xbf\xbd"},
  };
  for (const auto& [in, want] : cases) spdlog::error("{}", in);
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), cases.size()) << out_.str();
  for (size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    // nlohmann rejects malformed UTF-8 in a string, so parsing proves the line is valid UTF-8.
    const nlohmann::json j = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j.at("msg").get<std::string>(), cases[i].second);
  }
}

TEST(TextLoggingTest, TextFormatIsUnchanged) {
  std::ostringstream out;
  SetUpLogging(LogConfig{}, std::make_shared<spdlog::sinks::ostream_sink_st>(out));
  spdlog::info("say \"hi\"");
  spdlog::debug("hidden at level info");
  spdlog::default_logger()->flush();
  SetUpLogging(LogConfig{});
  const std::string line = out.str();
  EXPECT_NE(line.find(" info  say \"hi\"\n"), std::string::npos) << line;
  EXPECT_EQ(line.find("hidden"), std::string::npos) << line;
}

}  // namespace
}  // namespace belfry
