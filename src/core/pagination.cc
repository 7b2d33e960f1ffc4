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

std::string PrefixUpperBound(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    // The last code point: its lead byte is the last byte that is not a continuation (10xxxxxx).
    size_t lead = s.size() - 1;
    while (lead > 0 && (static_cast<unsigned char>(s[lead]) & 0xC0) == 0x80) --lead;
    const auto* b = reinterpret_cast<const unsigned char*>(s.data() + lead);
    const size_t n = s.size() - lead;
    uint32_t cp = n == 1 ? b[0] : n == 2 ? (b[0] & 0x1F) : n == 3 ? (b[0] & 0x0F) : (b[0] & 0x07);
    for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (b[i] & 0x3F);
    s.resize(lead);
    if (cp >= 0x10FFFF) continue;  // nothing above it: increase the code point before
    ++cp;
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE000;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  }
  return "";
}

}  // namespace belfry
