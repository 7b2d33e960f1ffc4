// Runs every case of the hostile corpora through its parser and checks the exact rejection reason:
// tests/corpus/hostile (commands, ParseCommand) and tests/corpus/hostile_reports (execution
// reports, ParseExecutionReport). The manifest format is documented at the top of each
// MANIFEST.tsv; tests/corpus/hostile_corpus loads them.
#include "corpus/hostile_corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/command_parser.h"
#include "core/execution_report.h"
#include "core/topic_policy.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

std::string Trace(const HostileCase& c) {
  return "MANIFEST.tsv line " + std::to_string(c.line) + ": " + c.file + " (" + c.description + ")";
}

// A rejection's message is bounded and printable: quoted input is capped at ~100 bytes (plus
// escapes) and the fixed text is short.
void ExpectPrintableMessage(const Status& status) {
  const std::string& message = status.message();
  EXPECT_FALSE(message.empty());
  EXPECT_LE(message.size(), 700u) << message;
  for (const char ch : message) {
    const auto b = static_cast<unsigned char>(ch);
    EXPECT_FALSE(b < 0x20 || b == 0x7f) << "control byte in: " << message;
  }
}

const HostileCase* FindCase(const std::vector<HostileCase>& cases, const std::string& file) {
  const auto it =
      std::find_if(cases.begin(), cases.end(), [&](const HostileCase& c) { return c.file == file; });
  return it == cases.end() ? nullptr : &*it;
}

class HostileCorpusTest : public ::testing::Test {
 protected:
  HostileCorpusTest() : policy_({"*"}, {"belfry.commands", "belfry.commands.dlq", "belfry.command-results"}) {
    rules_.intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
    rules_.shard_count = 120;
    rules_.max_details_bytes = 64 * 1024;
    rules_.max_command_bytes = 256 * 1024;
    rules_.topic_policy = &policy_;
    rules_.time_zones = &SystemTimeZones();
  }

  StatusOr<Command> Parse(const HostileCase& c) const {
    RawCommand raw;
    raw.key = c.key;
    raw.value = c.value;
    raw.source = SourcePosition{3, 1000 + c.line, 1'795'870'800'000};
    return ParseCommand(raw, rules_);
  }

  TopicPolicy policy_;
  CommandRules rules_;
};

TEST_F(HostileCorpusTest, EveryCaseIsRejectedWithItsReason) {
  const std::vector<HostileCase> cases = LoadHostileCorpus(HostileCorpus::kCommands);
  std::set<std::string> reasons;
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(Trace(c));
    const StatusOr<Command> result = Parse(c);
    ASSERT_FALSE(result.ok()) << "accepted a hostile command";
    EXPECT_EQ(result.status().code(), Status::Code::kInvalid);
    EXPECT_EQ(result.status().reason(), c.expected_reason) << result.status().ToString();
    ExpectPrintableMessage(result.status());
    reasons.insert(c.expected_reason);
  }
  EXPECT_GE(cases.size(), 40u);
  EXPECT_GE(reasons.size(), 15u);
}

StatusOr<ExecutionReport> ParseReport(const HostileCase& c) {
  RawExecution raw;
  raw.key = c.key;
  raw.value = c.value;
  raw.source = SourcePosition{4, 2000 + c.line, 1'795'870'800'000};
  return ParseExecutionReport(raw, ExecutionRules{});
}

TEST(HostileReportCorpusTest, EveryCaseIsRejectedWithItsReason) {
  const std::vector<HostileCase> cases = LoadHostileCorpus(HostileCorpus::kExecutionReports);
  std::set<std::string> reasons;
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(Trace(c));
    const StatusOr<ExecutionReport> result = ParseReport(c);
    ASSERT_FALSE(result.ok()) << "accepted a hostile execution report";
    EXPECT_EQ(result.status().code(), Status::Code::kInvalid);
    EXPECT_EQ(result.status().reason(), c.expected_reason) << result.status().ToString();
    ExpectPrintableMessage(result.status());
    reasons.insert(c.expected_reason);
  }
  EXPECT_GE(cases.size(), 40u);
  EXPECT_GE(reasons.size(), 17u);
}

TEST(HostileCorpusManifestTest, KeyEscapesDecode) {
  EXPECT_EQ(DecodeCorpusKey("-"), std::nullopt);
  EXPECT_EQ(DecodeCorpusKey("a\\x00b"), std::string("a\0b", 3));
  EXPECT_EQ(DecodeCorpusKey("a\\nb\\tc\\\\d"), std::string("a\nb\tc\\d"));
}

TEST(HostileCorpusManifestTest, GeneratedValuesHaveTheDocumentedSizes) {
  const std::vector<HostileCase> commands = LoadHostileCorpus(HostileCorpus::kCommands);
  const HostileCase* mb = FindCase(commands, "@gen:value_1mb");
  const HostileCase* key = FindCase(commands, "@gen:key_string_200k");
  const HostileCase* details = FindCase(commands, "@gen:details_70k");
  ASSERT_TRUE(mb && key && details);
  EXPECT_EQ(mb->value->size(), 1'000'000u);
  EXPECT_GT(key->value->size(), 200u * 1024);
  EXPECT_GT(details->value->size(), 70u * 1024);

  const std::vector<HostileCase> reports = LoadHostileCorpus(HostileCorpus::kExecutionReports);
  const HostileCase* arrays = FindCase(reports, "@gen:report_arrays_10000");
  const HostileCase* objects = FindCase(reports, "@gen:report_objects_10000");
  const HostileCase* large = FindCase(reports, "@gen:report_value_70k");
  ASSERT_TRUE(arrays && objects && large);
  EXPECT_EQ(std::count(arrays->value->begin(), arrays->value->end(), '['), 10'000);
  EXPECT_EQ(std::count(objects->value->begin(), objects->value->end(), '{'), 10'001);  // and the report's
  EXPECT_GT(large->value->size(), 70u * 1024);
  EXPECT_EQ(FindCase(reports, "@tombstone")->value, std::nullopt);
}

}  // namespace
}  // namespace belfry
