#include "core/json_writer.h"

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

}  // namespace belfry
