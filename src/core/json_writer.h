// Minimal JSON text writing for belfry's fixed output formats.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "belfry/clock.h"

namespace belfry {

// Appends `s` as a JSON string literal (with quotes), escaping '"', '\\' and control characters.
// A byte that starts no well-formed UTF-8 sequence is written as \ufffd, so the output is valid
// UTF-8 JSON whatever `s` holds (most callers pass text validated at ingestion; log messages
// may carry anything a library or PostgreSQL said).
void AppendJsonString(std::string* out, std::string_view s);

// Appends `s` as a JSON string literal, or null when it is empty (an optional text field).
void AppendJsonStringOrNull(std::string* out, std::string_view s);

// Appends `t` as an ISO-8601 JSON string ("2026-11-22T13:37:32.500Z"), or null when absent.
void AppendJsonTimeOrNull(std::string* out, const std::optional<EpochMs>& t);

// Appends `v` as a JSON number, as nlohmann::json writes a double: the shortest digits that read
// back as `v`, in fixed notation with at least one fractional digit ("0.0", "12.5", "100000.0")
// while the decimal point falls within 15 digits, else scientific ("1e+20"); null when not finite.
void AppendJsonNumber(std::string* out, double v);

}  // namespace belfry
