#include "core/pagination.h"

#include <charconv>

#include "core/base64url.h"

namespace belfry {
namespace {

Status InvalidLimit(std::string_view text, int32_t max_limit) {
  return Status::Invalid("invalid_limit", "limit must be an integer in 1.." + std::to_string(max_limit) + ", got \"" +
                                              std::string(text) + "\"");
}

}  // namespace

StatusOr<int32_t> ParsePageLimit(std::string_view text, int32_t max_limit) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || v < 1 || v > max_limit) return InvalidLimit(text, max_limit);
  return static_cast<int32_t>(v);
}

Status CheckPageLimit(int64_t limit, int32_t max_limit) {
  if (limit < 1 || limit > max_limit) return InvalidLimit(std::to_string(limit), max_limit);
  return Status();
}

std::string EncodePageCursor(std::string_view position) { return Base64UrlEncode(position); }

std::optional<std::string> DecodePageCursor(std::string_view cursor) {
  std::optional<std::string> position = Base64UrlDecode(cursor);
  if (!position || position->empty()) return std::nullopt;
  return position;
}

}  // namespace belfry
