// Small shared pieces of the CLI and the server.
#pragma once

#include <string>

#include "belfry/config.h"
#include "core/retry_planner.h"

namespace belfry {

// The migrations folder: cfg.migrations_dir, else ./migrations, else the dir next to the
// binary's ../share/belfry/migrations, else /usr/share/belfry/migrations.
std::string ResolveMigrationsDir(const Config& cfg);

// cfg.node_id, else "<hostname>-<pid>".
std::string ResolveNodeId(const Config& cfg);

// Retry placement: the tick and the catch-up window.
RetryRules MakeRetryRules(const Config& cfg);

extern const char* const kBelfryVersion;

}  // namespace belfry
