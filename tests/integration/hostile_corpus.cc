#include "hostile_corpus.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace belfry {
namespace {

std::string CorpusPath(const std::string& name) {
  return std::string(BELFRY_HOSTILE_CORPUS_DIR) + "/" + name;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// \xNN, \n, \t and \\ decoded; "-" means no key.
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

// {"id":"<id>","topic":"tracking.poll","intervalMinutes":5,"<field>":<open>"<fill x n>"<close>}
std::string PaddedCommand(const std::string& id, const std::string& field, const std::string& open, char fill,
                          size_t n, const std::string& close) {
  return "{\"id\":\"" + id + "\",\"topic\":\"tracking.poll\",\"intervalMinutes\":5,\"" + field +
         "\":" + open + "\"" + std::string(n, fill) + "\"" + close + "}";
}

std::optional<std::string> CaseValue(const std::string& file) {
  if (file == "@tombstone") return std::nullopt;
  if (file == "@gen:key_string_200k") return PaddedCommand("h-key-200k", "key", "", 'k', 200 * 1024, "");
  if (file == "@gen:details_70k")
    return PaddedCommand("h-details-70k", "jobDetails", "{\"pad\":", 'd', 70 * 1024, "}");
  if (file == "@gen:value_1mb") {
    constexpr size_t kSize = 1'000'000;
    const size_t overhead = PaddedCommand("h-1mb", "jobDetails", "{\"pad\":", 'x', 0, "}").size();
    return PaddedCommand("h-1mb", "jobDetails", "{\"pad\":", 'x', kSize - overhead, "}");
  }
  std::ifstream in(CorpusPath(file), std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "missing corpus file " << file;
    return std::string();
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::vector<HostileCase> LoadHostileCorpus() {
  std::vector<HostileCase> cases;
  std::ifstream in(CorpusPath("MANIFEST.tsv"));
  if (!in) {
    ADD_FAILURE() << "cannot read " << CorpusPath("MANIFEST.tsv");
    return cases;
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> parts;
    std::string part;
    std::istringstream fields(line);
    while (std::getline(fields, part, '\t')) parts.push_back(part);
    if (parts.size() != 4) {
      ADD_FAILURE() << "MANIFEST.tsv line " << number << ": " << line;
      continue;
    }
    HostileCase c;
    c.file = parts[0];
    c.key = DecodeKey(parts[1]);
    c.value = CaseValue(parts[0]);
    c.expected_reason = parts[2];
    c.description = parts[3];
    c.line = number;
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace belfry
