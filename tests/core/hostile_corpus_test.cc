// Runs every case of tests/corpus/hostile/MANIFEST.tsv through ParseCommand and checks the exact
// rejection reason. The manifest format is documented at its top.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/command_parser.h"
#include "core/topic_policy.h"

#ifndef BELFRY_HOSTILE_CORPUS_DIR
#error "BELFRY_HOSTILE_CORPUS_DIR must point at tests/corpus/hostile"
#endif

namespace belfry {
namespace {

struct HostileCase {
  std::string file;
  std::optional<std::string> key;
  std::string expected_reason;
  std::string description;
  int line = 0;
};

std::string CorpusPath(const std::string& name) {
  return std::string(BELFRY_HOSTILE_CORPUS_DIR) + "/" + name;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes \xNN, \n, \t and \\; "-" means no key.
std::optional<std::string> DecodeKey(const std::string& field) {
  if (field == "-") return std::nullopt;
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '\\' || i + 1 >= field.size()) {
      out += field[i];
      continue;
    }
    const char e = field[++i];
    if (e == 'n') {
      out += '\n';
    } else if (e == 't') {
      out += '\t';
    } else if (e == 'x' && i + 2 < field.size() && HexDigit(field[i + 1]) >= 0 &&
               HexDigit(field[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(field[i + 1]) * 16 + HexDigit(field[i + 2]));
      i += 2;
    } else {
      out += e;
    }
  }
  return out;
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(line);
  while (std::getline(in, part, '\t')) parts.push_back(part);
  return parts;
}

std::vector<HostileCase> LoadManifest() {
  std::vector<HostileCase> cases;
  std::ifstream in(CorpusPath("MANIFEST.tsv"));
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> parts = SplitTabs(line);
    EXPECT_EQ(parts.size(), 4u) << "MANIFEST.tsv line " << number << ": " << line;
    if (parts.size() != 4) continue;
    cases.push_back(HostileCase{parts[0], DecodeKey(parts[1]), parts[2], parts[3], number});
  }
  return cases;
}

// {"id":"<id>","topic":"tracking.poll","intervalMinutes":5,"<field>":<open>"<fill x n>"<close>}
std::string PaddedCommand(const std::string& id, const std::string& field, const std::string& open, char fill,
                          size_t n, const std::string& close) {
  return "{\"id\":\"" + id + "\",\"topic\":\"tracking.poll\",\"intervalMinutes\":5,\"" + field +
         "\":" + open + "\"" + std::string(n, fill) + "\"" + close + "}";
}

// The value bytes of a case: nullopt for a tombstone.
std::optional<std::string> CaseValue(const HostileCase& c) {
  if (c.file == "@tombstone") return std::nullopt;
  if (c.file == "@gen:key_string_200k") return PaddedCommand("h-key-200k", "key", "", 'k', 200 * 1024, "");
  if (c.file == "@gen:details_70k") {
    return PaddedCommand("h-details-70k", "jobDetails", "{\"pad\":", 'd', 70 * 1024, "}");
  }
  if (c.file == "@gen:value_1mb") {
    constexpr size_t kSize = 1'000'000;
    const size_t overhead = PaddedCommand("h-1mb", "jobDetails", "{\"pad\":", 'x', 0, "}").size();
    return PaddedCommand("h-1mb", "jobDetails", "{\"pad\":", 'x', kSize - overhead, "}");
  }
  const std::optional<std::string> bytes = ReadFile(CorpusPath(c.file));
  EXPECT_TRUE(bytes.has_value()) << "missing corpus file " << c.file;
  return bytes.value_or("");
}

class HostileCorpusTest : public ::testing::Test {
 protected:
  HostileCorpusTest() : policy_({"*"}, {"belfry.commands", "belfry.commands.dlq", "belfry.command-results"}) {
    rules_.intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
    rules_.shard_count = 120;
    rules_.max_details_bytes = 64 * 1024;
    rules_.max_command_bytes = 256 * 1024;
    rules_.topic_policy = &policy_;
  }

  TopicPolicy policy_;
  CommandRules rules_;
};

TEST_F(HostileCorpusTest, EveryCaseIsRejectedWithItsReason) {
  const std::vector<HostileCase> cases = LoadManifest();
  std::set<std::string> reasons;
  for (const HostileCase& c : cases) {
    SCOPED_TRACE("MANIFEST.tsv line " + std::to_string(c.line) + ": " + c.file + " (" + c.description + ")");
    RawCommand raw;
    raw.key = c.key;
    raw.value = CaseValue(c);
    raw.source = SourcePosition{3, 1000 + c.line, 1'795'870'800'000};
    const StatusOr<Command> result = ParseCommand(raw, rules_);
    ASSERT_FALSE(result.ok()) << "accepted a hostile command";
    EXPECT_EQ(result.status().code(), Status::Code::kInvalid);
    EXPECT_EQ(result.status().reason(), c.expected_reason) << result.status().ToString();
    EXPECT_FALSE(result.status().message().empty());
    reasons.insert(c.expected_reason);
  }
  EXPECT_GE(cases.size(), 40u);
  EXPECT_GE(reasons.size(), 15u);
}

TEST_F(HostileCorpusTest, MessagesAreBoundedAndPrintable) {
  for (const HostileCase& c : LoadManifest()) {
    SCOPED_TRACE(c.file);
    RawCommand raw;
    raw.key = c.key;
    raw.value = CaseValue(c);
    const StatusOr<Command> result = ParseCommand(raw, rules_);
    ASSERT_FALSE(result.ok());
    const std::string& message = result.status().message();
    // Quoted input is capped at ~100 bytes (plus escapes); the fixed text is short.
    EXPECT_LE(message.size(), 700u) << message;
    for (const char ch : message) {
      const auto b = static_cast<unsigned char>(ch);
      EXPECT_FALSE(b < 0x20 || b == 0x7f) << "control byte in: " << message;
    }
  }
}

TEST(HostileCorpusManifestTest, KeyEscapesDecode) {
  EXPECT_EQ(DecodeKey("-"), std::nullopt);
  EXPECT_EQ(DecodeKey("a\\x00b"), std::string("a\0b", 3));
  EXPECT_EQ(DecodeKey("a\\nb\\tc\\\\d"), std::string("a\nb\tc\\d"));
}

TEST(HostileCorpusManifestTest, GeneratedValuesHaveTheDocumentedSizes) {
  EXPECT_EQ(CaseValue(HostileCase{"@gen:value_1mb", "h-1mb", "", "", 0})->size(), 1'000'000u);
  EXPECT_GT(CaseValue(HostileCase{"@gen:key_string_200k", "k", "", "", 0})->size(), 200u * 1024);
  EXPECT_GT(CaseValue(HostileCase{"@gen:details_70k", "k", "", "", 0})->size(), 70u * 1024);
}

}  // namespace
}  // namespace belfry
