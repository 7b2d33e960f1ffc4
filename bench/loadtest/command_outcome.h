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

class CommandOutcomeParser final {
 public:
  // False when `json` is not an outcome record.
  bool Parse(std::string_view json, CommandOutcomeView* out);

 private:
  simdjson::dom::parser parser_;
};

}  // namespace belfry::loadtest
