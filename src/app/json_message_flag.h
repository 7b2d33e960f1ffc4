// JsonMessageFlag: the spdlog pattern flag that writes a log message as a JSON string literal,
// so that every line of `log.format: json` is valid JSON whatever the message holds (quotes
// from PostgreSQL errors, newlines, control characters, malformed UTF-8).
#pragma once

#include <spdlog/pattern_formatter.h>

#include <memory>

namespace belfry {

// The flag character JsonMessageFlag is registered under: `"msg":%j` in a pattern.
inline constexpr char kJsonMessageFlag = 'j';

// Writes the message payload, quotes included, escaped by AppendJsonString (core/json_writer).
// Thread-safety: stateless; spdlog clones it per formatter.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& tm_time,
              spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::custom_flag_formatter> clone() const override;
};

}  // namespace belfry
