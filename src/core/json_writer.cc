#include "core/json_writer.h"

#include <charconv>
#include <cmath>

#include "core/iso_time.h"
#include "core/message_quote.h"

namespace belfry {

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run_start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
    if (c >= 0x80) {
      if (const size_t len = Utf8SequenceLength(s, i); len != 0) {
        i += len - 1;
        continue;
      }
    }
    out->append(s.data() + run_start, i - run_start);
    run_start = i + 1;
    if (c >= 0x80) {
      out->append("\\ufffd");
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 0xf]);
    }
  }
  out->append(s.data() + run_start, s.size() - run_start);
  out->push_back('"');
}

void AppendJsonStringOrNull(std::string* out, std::string_view s) {
  if (s.empty()) {
    out->append("null");
  } else {
    AppendJsonString(out, s);
  }
}

void AppendJsonTimeOrNull(std::string* out, const std::optional<EpochMs>& t) {
  if (t) {
    AppendJsonString(out, FormatIsoTime(*t));
  } else {
    out->append("null");
  }
}

void AppendJsonNumber(std::string* out, double v) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  if (std::signbit(v)) out->push_back('-');
  v = std::fabs(v);
  if (v == 0) {
    out->append("0.0");
    return;
  }
  char buf[64];
  const char* end = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific).ptr;
  const std::string_view sci(buf, static_cast<size_t>(end - buf));  // "d[.ddd]e[+-]xx", shortest
  const size_t e = sci.find('e');
  std::string digits(1, sci[0]);
  if (e > 1) digits.append(sci.substr(2, e - 2));
  int exp10 = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp10);
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // where the decimal point falls, counted from the first digit
  constexpr int kMaxFixed = 15;
  constexpr int kMinFixed = -4;
  if (k <= n && n <= kMaxFixed) {
    out->append(digits);
    out->append(static_cast<size_t>(n - k), '0');
    out->append(".0");
  } else if (0 < n && n <= kMaxFixed) {
    out->append(digits, 0, static_cast<size_t>(n));
    out->push_back('.');
    out->append(digits, static_cast<size_t>(n));
  } else if (kMinFixed < n && n <= 0) {
    out->append("0.");
    out->append(static_cast<size_t>(-n), '0');
    out->append(digits);
  } else {
    out->append(sci);
  }
}

}  // namespace belfry
