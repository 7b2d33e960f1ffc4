#include "core/message_quote.h"

#include <fmt/format.h>

namespace belfry {
namespace {

// Appends text[0..) escaped until `max_bytes` of input are consumed (a UTF-8 sequence is never
// split); returns the number of input bytes consumed.
size_t AppendEscaped(std::string_view text, size_t max_bytes, bool escape_quotes, std::string* out) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t len = Utf8SequenceLength(text, i);
    if (i + (len == 0 ? 1 : len) > max_bytes) break;
    if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7f))) {
      *out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (len == 1 && escape_quotes && (c == '"' || c == '\\')) {
      *out += '\\';
      *out += static_cast<char>(c);
      ++i;
    } else if (len == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      *out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));  // C1 control
      i += 2;
    } else {
      out->append(text.substr(i, len));
      i += len;
    }
  }
  return i;
}

}  // namespace

size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    return k < text.size() && byte(k) >= lo && byte(k) <= hi;
  };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xBF) && cont(i + 3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

size_t FirstInvalidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string QuoteForMessage(std::string_view text, size_t max_bytes) {
  std::string out = "\"";
  const size_t consumed = AppendEscaped(text, max_bytes, /*escape_quotes=*/true, &out);
  out += '"';
  if (consumed < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

std::string ExcerptForMessage(std::string_view text, size_t max_bytes) {
  std::string out;
  if (AppendEscaped(text, max_bytes, /*escape_quotes=*/false, &out) < text.size()) out += "...";
  return out;
}

std::optional<size_t> FirstControlChar(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) return i;
  }
  return std::nullopt;
}

}  // namespace belfry
