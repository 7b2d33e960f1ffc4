// `belfry serve`: command consumer, scheduler and admin HTTP in one process.
#pragma once

#include "belfry/config.h"

namespace belfry {

// Returns the process exit code: 0 after a clean shutdown (SIGTERM/SIGINT), 2 when the
// database's schema or shard_count disagrees with the config, 1 on other start-up errors.
int RunServe(const Config& cfg);

}  // namespace belfry
