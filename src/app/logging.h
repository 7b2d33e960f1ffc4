// Logging set-up: spdlog to stderr, text or one JSON object per line.
#pragma once

#include "belfry/config.h"

namespace belfry {

void SetUpLogging(const LogConfig& cfg);

}  // namespace belfry
