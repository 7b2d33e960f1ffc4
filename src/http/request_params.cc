#include "http/request_params.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>

#include "belfry/status.h"
#include "core/message_quote.h"

namespace belfry {

std::optional<std::string> PercentDecode(std::string_view in) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = hex(in[i + 1]);
    const int lo = hex(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<std::vector<std::string>> RawQueryValues(std::string_view target, std::string_view name) {
  std::vector<std::string> out;
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return out;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    std::optional<std::string> value = PercentDecode(pair.substr(eq + 1));
    if (!value) return std::nullopt;
    out.push_back(std::move(*value));
  }
  return out;
}

bool IsStorableText(std::string_view s) {
  return s.find('\0') == std::string_view::npos && FirstInvalidUtf8(s) == std::string_view::npos;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

std::string CheckParams(const httplib::Request& req, std::initializer_list<std::string_view> allowed) {
  for (const auto& [name, value] : req.params) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || name == a;
    if (!ok) {
      std::string expected;
      for (std::string_view a : allowed) expected += (expected.empty() ? "" : ", ") + std::string(a);
      return "unknown query parameter \"" + name + "\" (expected: " + expected + ")";
    }
  }
  return "";
}

std::string Param(const httplib::Request& req, const char* name) {
  auto it = req.params.find(name);
  return it == req.params.end() ? std::string() : it->second;
}

std::string DecodePathId(std::string_view raw, std::string_view what, std::string* id) {
  const std::string prefix = "the " + std::string(what) + " id in the path is ";
  std::optional<std::string> decoded = PercentDecode(raw);
  if (!decoded) return prefix + "not validly percent-encoded";
  if (decoded->empty()) return prefix + "empty";
  if (!IsStorableText(*decoded)) return prefix + "not valid UTF-8 or contains a NUL byte";
  *id = std::move(*decoded);
  return {};
}

std::string IntParam(const httplib::Request& req, const char* name, int64_t lo, int64_t hi, int64_t* out) {
  const std::string text = Param(req, name);
  if (text.empty()) return {};
  const std::optional<int64_t> v = ParseInt(text);
  if (!v || *v < lo || *v > hi) {
    return std::string(name) + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
           ", got \"" + text + "\"";
  }
  *out = *v;
  return {};
}

std::string PageLimitParam(const httplib::Request& req, PageSize size, int32_t max_limit, int32_t* out) {
  const std::string text = Param(req, "limit");
  if (text.empty()) {
    *out = std::min(size.default_limit, max_limit);
    return {};
  }
  StatusOr<int32_t> limit = ParsePageLimit(text, max_limit);
  if (!limit.ok()) return limit.status().message();
  *out = *limit;
  return {};
}

std::string PageCursorParam(const httplib::Request& req, std::string* position) {
  const std::string text = Param(req, "cursor");
  if (text.empty()) return {};
  std::optional<std::string> decoded = DecodePageCursor(text);
  if (!decoded) return std::string(kInvalidCursorMessage);
  *position = std::move(*decoded);
  return {};
}

}  // namespace belfry
