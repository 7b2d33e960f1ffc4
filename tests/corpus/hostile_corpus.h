// The hostile corpora: messages that belfry must reject, each with its exact reason, listed in a
// MANIFEST.tsv whose header documents the format. One loader for every test that runs them: the
// parser tests (tests/core/hostile_corpus_test.cc) and the integration test that publishes them
// (tests/integration/hostile_itest.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace belfry {

enum class HostileCorpus {
  kCommands,          // tests/corpus/hostile: values for the commands topic (ParseCommand)
  kExecutionReports,  // tests/corpus/hostile_reports: values for the executions topic (ParseExecutionReport)
};

struct HostileCase {
  std::string file;  // a corpus file, "@tombstone" or "@gen:<name>"
  std::optional<std::string> key;
  std::optional<std::string> value;  // nullopt: a tombstone
  std::string expected_reason;
  std::string description;
  int line = 0;  // in MANIFEST.tsv
};

// Every case of the corpus's manifest, in manifest order, with its key decoded and its value read
// or generated. Adds a test failure (and skips the case) for a malformed line, and adds one for a
// missing file or an unknown @gen name.
std::vector<HostileCase> LoadHostileCorpus(HostileCorpus corpus);

// A manifest's kafka_key column: "-" is no key; \xNN, \n, \t and \\ are decoded.
std::optional<std::string> DecodeCorpusKey(const std::string& field);

}  // namespace belfry
