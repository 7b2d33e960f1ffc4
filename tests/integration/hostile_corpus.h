// The hostile command corpus (tests/corpus/hostile/MANIFEST.tsv; its header documents the format)
// as messages an integration test can publish.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace belfry {

struct HostileCase {
  std::string file;  // a corpus file, "@tombstone" or "@gen:<name>"
  std::optional<std::string> key;
  std::optional<std::string> value;  // nullopt: a tombstone
  std::string expected_reason;
  std::string description;
  int line = 0;  // in MANIFEST.tsv
};

// Every case of the manifest with its key decoded and its value read or generated. Adds a test
// failure for a malformed line or a missing file.
std::vector<HostileCase> LoadHostileCorpus();

}  // namespace belfry
