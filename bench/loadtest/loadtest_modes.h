// The belfry-loadtest modes. Each Register*Mode adds one CLI11 subcommand whose callback stores
// the mode's entry point in *run; main() runs it after parsing. Every mode prints a progress
// line per second on stderr and its JSON summary on stdout, and returns the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace belfry::loadtest {

struct CommonOptions {
  std::string brokers;       // default: $BELFRY_KAFKA_BROKERS or 127.0.0.1:59092
  std::string database_url;  // default: $BELFRY_DATABASE_URL or the local stack's
  std::string commands_topic = "belfry.commands";
  std::string results_topic = "belfry.command-results";
  std::map<std::string, std::string> kafka_properties;  // --kafka-property key=value
};

using ModeRunner = std::function<int()>;

// Adds --brokers, --database-url, --commands-topic, --results-topic and --kafka-property to
// `sub`, bound to `common`.
void AddCommonOptions(CLI::App* sub, CommonOptions* common);

void RegisterRawMode(CLI::App& app, CommonOptions* common, ModeRunner* run);
void RegisterSeedMode(CLI::App& app, CommonOptions* common, ModeRunner* run);
void RegisterCrudMode(CLI::App& app, CommonOptions* common, ModeRunner* run);
void RegisterVerifyMode(CLI::App& app, CommonOptions* common, ModeRunner* run);
void RegisterBurstMode(CLI::App& app, CommonOptions* common, ModeRunner* run);
void RegisterCatchUpMode(CLI::App& app, CommonOptions* common, ModeRunner* run);
void RegisterApiMode(CLI::App& app, CommonOptions* common, ModeRunner* run);
void RegisterExecutionsMode(CLI::App& app, CommonOptions* common, ModeRunner* run);

// The raw producer run, shared by `raw` and by `burst` (which compares itself with it).
struct RawOptions {
  int64_t messages = 1'000'000;
  size_t size = 300;  // bytes per message value
  std::string topic = "lt.raw";
  int32_t topics = 1;      // >1: topic.0 .. topic.(K-1), round-robin
  int32_t partitions = 4;  // for topics the run creates
  std::string plot_prefix;
};
// Returns the summary JSON ("msgs_per_s", "mb_per_s", "ack_latency", ...). Throws on setup
// errors.
nlohmann::ordered_json RunRaw(const CommonOptions& common, const RawOptions& options,
                              const std::string& label);

// Parses "500ms", "30s", "5m", "1h" or plain seconds. Throws std::invalid_argument.
int64_t ParseDurationMs(const std::string& text);

}  // namespace belfry::loadtest
