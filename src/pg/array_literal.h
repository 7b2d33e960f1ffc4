// PostgreSQL array literals, "{1,2,3}" or {"a","b"}, for array parameters ($1::int[], ::text[]):
// the one way belfry builds them (values are bound as parameters, never spliced into SQL).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace belfry {

// Appends one element: an integer as its digits; a string double-quoted, with " and \ escaped
// (the array-literal rules; any other byte stands for itself inside the quotes).
inline void AppendArrayElement(std::string* out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}
inline void AppendArrayElement(std::string* out, std::string_view v) {
  out->push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  out->push_back('"');
}

// The literal of `values`, in iteration order: "{}" when empty.
template <typename Range>
std::string ArrayLiteral(const Range& values) {
  std::string out = "{";
  for (const auto& v : values) {
    if (out.size() > 1) out.push_back(',');
    AppendArrayElement(&out, v);
  }
  out.push_back('}');
  return out;
}

}  // namespace belfry
