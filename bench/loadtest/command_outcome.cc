#include "loadtest/command_outcome.h"

namespace belfry::loadtest {

bool CommandOutcomeParser::Parse(std::string_view json, CommandOutcomeView* out) {
  simdjson::dom::element doc;
  if (parser_.parse(json.data(), json.size(), /*realloc_if_needed=*/true).get(doc) != simdjson::SUCCESS)
    return false;
  std::string_view status;
  int64_t partition = -1;
  int64_t offset = -1;
  if (doc["id"].get(out->id) != simdjson::SUCCESS || doc["status"].get(status) != simdjson::SUCCESS ||
      doc["partition"].get(partition) != simdjson::SUCCESS ||
      doc["offset"].get(offset) != simdjson::SUCCESS) {
    return false;
  }
  out->applied = status == "applied";
  out->partition = static_cast<int32_t>(partition);
  out->offset = offset;
  return true;
}

}  // namespace belfry::loadtest
