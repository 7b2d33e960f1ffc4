// Logging set-up: spdlog to stderr, text or one JSON object per line.
#pragma once

#include <spdlog/common.h>

#include "belfry/config.h"

namespace belfry {

// Makes a logger named "belfry" writing to `sink` (stderr when omitted) the default logger, with
// the format and level of `cfg`. `format: json` writes one JSON object per line
// ({"time","level","thread","msg"}), valid UTF-8 JSON whatever the message holds.
// May be called again (tests do); the new logger replaces the old.
void SetUpLogging(const LogConfig& cfg, spdlog::sink_ptr sink = nullptr);

}  // namespace belfry
