// Minimal JSON text writing for belfry's fixed output formats.
#pragma once

#include <string>
#include <string_view>

namespace belfry {

// Appends `s` as a JSON string literal (with quotes), escaping '"', '\\' and control characters.
// REQUIRES: s is valid UTF-8 (everything belfry writes was validated at ingestion).
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace belfry
