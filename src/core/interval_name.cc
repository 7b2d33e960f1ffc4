#include "core/interval_name.h"

#include <limits>

namespace belfry {

std::optional<int32_t> ParseExecutionInterval(std::string_view name) {
  constexpr std::string_view kPrefix = "EVERY_";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  if (name == "MINUTE") return 1;
  if (name == "HOUR") return 60;

  // <N>_MINUTES or <N>_HOURS, N a positive decimal without leading zeros.
  size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
  constexpr size_t kMaxDigits = 9;  // keeps N * 60 well inside int64 before the range check
  if (digits == 0 || digits > kMaxDigits || name[0] == '0') return std::nullopt;
  int64_t n = 0;
  for (size_t i = 0; i < digits; ++i) n = n * 10 + (name[i] - '0');

  const std::string_view unit = name.substr(digits);
  int64_t minutes = 0;
  if (unit == "_MINUTES") {
    minutes = n;
  } else if (unit == "_HOURS") {
    minutes = n * 60;
  } else {
    return std::nullopt;
  }
  if (minutes > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(minutes);
}

}  // namespace belfry
