// Reading belfry's command-results records:
// {"id","op","status":"applied"|"rejected","error","partition","offset"}.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>

namespace belfry::loadtest {

struct CommandOutcomeView {
  std::string_view id;  // valid until the next Parse
  bool applied = false;
  int32_t partition = -1;  // the command's position in the commands topic
  int64_t offset = -1;
};

// One key for a command's position in the commands topic, which its outcome repeats: how a
// delivery report and an outcome are matched.
inline uint64_t CommandPositionKey(int32_t partition, int64_t offset) {
  return (static_cast<uint64_t>(partition) << 44) ^ static_cast<uint64_t>(offset);
}

class CommandOutcomeParser final {
 public:
  // False when `json` is not an outcome record.
  bool Parse(std::string_view json, CommandOutcomeView* out);

 private:
  simdjson::dom::parser parser_;
};

}  // namespace belfry::loadtest
