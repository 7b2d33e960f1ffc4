// ParseConfig: YAML text plus BELFRY_* environment overrides -> Config. Unknown keys, bad
// values and inconsistent combinations are errors whose message names the key.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "belfry/config.h"
#include "belfry/status.h"

namespace belfry {

// "500ms", "30s", "15m", "1h", "1d" (integers only). nullopt on anything else.
std::optional<int64_t> ParseDurationMs(std::string_view text);

// Looks up an environment variable; returns nullopt when unset. Injected for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

// `yaml_text` may be empty (all defaults). Environment overrides: every scalar key has the
// variable BELFRY_<PATH> where PATH is the dotted key upper-cased with '.' -> '_', e.g.
// BELFRY_SCHEDULER_TICK=250ms, BELFRY_KAFKA_BROKERS=host:9092, BELFRY_DATABASE_URL=...;
// lists (scheduler.intervals, commands.allowed_topics) take comma-separated values.
StatusOr<Config> ParseConfig(const std::string& yaml_text, const EnvLookup& env);

// Reads the file (if path is non-empty) and calls ParseConfig.
StatusOr<Config> LoadConfig(const std::string& path, const EnvLookup& env);

// The cross-field rules (60-second rule, intervals dividing 1440, ...). Called by ParseConfig.
Status ValidateConfig(const Config& c);

const char* MisfirePolicyName(MisfirePolicy p);

}  // namespace belfry
