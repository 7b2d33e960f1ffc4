#include "app/json_message_flag.h"

#include <string>
#include <string_view>

#include "core/json_writer.h"

namespace belfry {

void JsonMessageFlag::format(const spdlog::details::log_msg& msg, const std::tm&,
                             spdlog::memory_buf_t& dest) {
  std::string quoted;
  quoted.reserve(msg.payload.size() + 2);
  AppendJsonString(&quoted, std::string_view(msg.payload.data(), msg.payload.size()));
  dest.append(quoted.data(), quoted.data() + quoted.size());
}

std::unique_ptr<spdlog::custom_flag_formatter> JsonMessageFlag::clone() const {
  return std::make_unique<JsonMessageFlag>();
}

}  // namespace belfry
