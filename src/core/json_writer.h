// Minimal JSON text writing for belfry's fixed output formats.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "belfry/clock.h"

namespace belfry {

// Appends `s` as a JSON string literal (with quotes), escaping '"', '\\' and control characters.
// REQUIRES: s is valid UTF-8 (everything belfry writes was validated at ingestion).
void AppendJsonString(std::string* out, std::string_view s);

// Appends `t` as an ISO-8601 JSON string ("2026-11-22T13:37:32.500Z"), or null when absent.
void AppendJsonTimeOrNull(std::string* out, const std::optional<EpochMs>& t);

}  // namespace belfry
