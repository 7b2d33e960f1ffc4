// ISO-8601 / RFC 3339 timestamps in UTC.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "belfry/clock.h"

namespace belfry {

// Parses "YYYY-MM-DDTHH:MM:SS[.fff...][Z|+HH:MM|-HH:MM]" (a space is accepted for 'T').
// Rejects impossible calendar dates (2026-02-30), hours > 23, years outside 1970..9999, and
// anything trailing. Fractions beyond milliseconds are truncated.
std::optional<EpochMs> ParseIsoTime(std::string_view text);

// Formats as "2026-11-22T13:37:32.500Z" (always milliseconds, always Z).
std::string FormatIsoTime(EpochMs ms);
// The same text, appended to `out` without a temporary string (the trigger encoder's path).
void AppendIsoTime(EpochMs ms, std::string* out);

}  // namespace belfry
