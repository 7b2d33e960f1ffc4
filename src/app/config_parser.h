// ParseConfig: YAML text plus BELFRY_* environment overrides -> Config. Unknown keys, bad
// values and inconsistent combinations are errors whose message names the key.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/config.h"
#include "belfry/status.h"

namespace belfry {

// "500ms", "30s", "15m", "1h", "1d" (integers only). nullopt on anything else, and when the
// milliseconds do not fit in int64_t.
std::optional<int64_t> ParseDurationMs(std::string_view text);

enum class ConfigKeyKind {
  kString,
  kBool,         // true | false
  kInteger,      // in [min, max]
  kDuration,     // "500ms" ... "7d", in [min, max] milliseconds
  kIntegerList,  // each item in [min, max]
  kStringList,
  kStringMap,  // kafka.properties: YAML only, no environment variable
  kEnum,       // scheduler.misfire_policy
  kRemoved,    // still recognised, to fail with a message naming its replacement
};

// One key ParseConfig accepts.
struct ConfigKey {
  std::string path;     // "scheduler.shard_count"
  std::string env_var;  // "BELFRY_SCHEDULER_SHARD_COUNT"; empty for kStringMap
  ConfigKeyKind kind;
  int64_t min = 0;  // kInteger, kDuration (ms), kIntegerList: the inclusive range
  int64_t max = 0;
};

// Every key ParseConfig accepts, section by section (the parser's own table).
const std::vector<ConfigKey>& ConfigKeys();

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

// The rules that span keys or sets of values (60-second rule, intervals dividing 1440, log level
// names, ...). Called by ParseConfig; each key's own range is checked as the key is read.
Status ValidateConfig(const Config& c);

const char* MisfirePolicyName(MisfirePolicy p);

}  // namespace belfry
