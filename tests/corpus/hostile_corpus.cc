#include "corpus/hostile_corpus.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

#ifndef BELFRY_CORPUS_DIR
#error "BELFRY_CORPUS_DIR must point at tests/corpus"
#endif

namespace belfry {
namespace {

std::string CorpusDir(HostileCorpus corpus) {
  const char* name = corpus == HostileCorpus::kCommands ? "hostile" : "hostile_reports";
  return std::string(BELFRY_CORPUS_DIR) + "/" + name;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// {"id":"<id>","topic":"tracking.poll","intervalMinutes":5,"<field>":<open>"<fill x n>"<close>}
std::string PaddedCommand(const std::string& id, const std::string& field, const std::string& open, char fill,
                          size_t n, const std::string& close) {
  return "{\"id\":\"" + id + "\",\"topic\":\"tracking.poll\",\"intervalMinutes\":5,\"" + field +
         "\":" + open + "\"" + std::string(n, fill) + "\"" + close + "}";
}

// {"jobId":"<id>","scheduledFor":0,"status":"failed","error":<error>}
std::string Report(const std::string& id, const std::string& error) {
  return "{\"jobId\":\"" + id + "\",\"scheduledFor\":0,\"status\":\"failed\",\"error\":" + error + "}";
}

// `levels` nested arrays, or objects {"a":...} around a 1.
std::string Nested(size_t levels, bool objects) {
  std::string out;
  out.reserve(levels * 6 + 1);
  for (size_t i = 0; i < levels; ++i) out += objects ? "{\"a\":" : "[";
  if (objects) out += '1';
  out.append(levels, objects ? '}' : ']');
  return out;
}

// The documented @gen values (see the manifests' headers); nullopt for an unknown name.
std::optional<std::string> Generated(const std::string& name) {
  if (name == "@gen:key_string_200k") return PaddedCommand("h-key-200k", "key", "", 'k', 200 * 1024, "");
  if (name == "@gen:details_70k") {
    return PaddedCommand("h-details-70k", "jobDetails", "{\"pad\":", 'd', 70 * 1024, "}");
  }
  if (name == "@gen:value_1mb") {
    constexpr size_t kSize = 1'000'000;
    const size_t overhead = PaddedCommand("h-1mb", "jobDetails", "{\"pad\":", 'x', 0, "}").size();
    return PaddedCommand("h-1mb", "jobDetails", "{\"pad\":", 'x', kSize - overhead, "}");
  }
  if (name == "@gen:report_arrays_10000") return Report("r-deep-arrays", Nested(10'000, false));
  if (name == "@gen:report_objects_10000") return Report("r-deep-objects", Nested(10'000, true));
  if (name == "@gen:report_value_70k") return Report("r-70k", "\"" + std::string(70 * 1024, 'e') + "\"");
  return std::nullopt;
}

// The value bytes of a case: nullopt for a tombstone.
std::optional<std::string> CaseValue(const std::string& dir, const std::string& file) {
  if (file == "@tombstone") return std::nullopt;
  if (file.rfind("@gen:", 0) == 0) {
    std::optional<std::string> value = Generated(file);
    if (!value) ADD_FAILURE() << "unknown generated case " << file;
    return value.value_or("");
  }
  std::ifstream in(dir + "/" + file, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "missing corpus file " << dir << "/" << file;
    return std::string();
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::optional<std::string> DecodeCorpusKey(const std::string& field) {
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

std::vector<HostileCase> LoadHostileCorpus(HostileCorpus corpus) {
  const std::string dir = CorpusDir(corpus);
  std::vector<HostileCase> cases;
  std::ifstream in(dir + "/MANIFEST.tsv");
  if (!in) {
    ADD_FAILURE() << "cannot read " << dir << "/MANIFEST.tsv";
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
      ADD_FAILURE() << dir << "/MANIFEST.tsv line " << number << " does not have 4 columns: " << line;
      continue;
    }
    HostileCase c;
    c.file = parts[0];
    c.key = DecodeCorpusKey(parts[1]);
    c.value = CaseValue(dir, parts[0]);
    c.expected_reason = parts[2];
    c.description = parts[3];
    c.line = number;
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace belfry
