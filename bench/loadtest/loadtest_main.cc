// belfry-loadtest: the load-test harness of issue 4. See docs/loadtest.md for the design of
// each mode and BENCHMARKS.md for how they are run and what they measured.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <stdexcept>

#include "loadtest/loadtest_modes.h"

namespace belfry::loadtest {

void AddCommonOptions(CLI::App* sub, CommonOptions* common) {
  sub->add_option("--brokers", common->brokers, "Kafka bootstrap servers (env BELFRY_KAFKA_BROKERS)")
      ->capture_default_str();
  sub->add_option("--database-url", common->database_url,
                  "PostgreSQL URL of belfry's database (env BELFRY_DATABASE_URL)")
      ->capture_default_str();
  sub->add_option("--commands-topic", common->commands_topic,
                  "belfry's commands topic (env BELFRY_KAFKA_COMMANDS_TOPIC)")
      ->capture_default_str();
  sub->add_option("--results-topic", common->results_topic,
                  "belfry's command-results topic (env BELFRY_KAFKA_RESULTS_TOPIC)")
      ->capture_default_str();
  sub->add_option_function<std::vector<std::string>>(
      "--kafka-property",
      [common](const std::vector<std::string>& items) {
        for (const std::string& item : items) {
          const size_t eq = item.find('=');
          if (eq == std::string::npos || eq == 0)
            throw CLI::ValidationError("--kafka-property", "want key=value");
          common->kafka_properties[item.substr(0, eq)] = item.substr(eq + 1);
        }
      },
      "raw librdkafka producer property key=value, applied after belfry's trigger-sink settings "
      "(repeatable)");
}

int64_t ParseDurationMs(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("bad duration '" + text + "'");
  }
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1000;
  } else if (unit == "ms") {
    scale = 1;
  } else if (unit == "m" || unit == "min") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else {
    throw std::invalid_argument("bad duration unit in '" + text + "' (use ms, s, m or h)");
  }
  if (!(value >= 0)) throw std::invalid_argument("negative duration '" + text + "'");
  return static_cast<int64_t>(value * scale);
}

}  // namespace belfry::loadtest

int main(int argc, char** argv) {
  using namespace belfry::loadtest;
  CommonOptions common;
  const char* brokers = std::getenv("BELFRY_KAFKA_BROKERS");
  common.brokers = brokers != nullptr && *brokers != 0 ? brokers : "127.0.0.1:59092";
  const char* url = std::getenv("BELFRY_DATABASE_URL");
  common.database_url =
      url != nullptr && *url != 0 ? url : "postgresql://belfry:belfry@127.0.0.1:55432/belfry";

  if (const char* t = std::getenv("BELFRY_KAFKA_COMMANDS_TOPIC"); t != nullptr && *t != 0)
    common.commands_topic = t;
  if (const char* t = std::getenv("BELFRY_KAFKA_RESULTS_TOPIC"); t != nullptr && *t != 0)
    common.results_topic = t;

  CLI::App app{"belfry-loadtest: load-test harness for belfry (raw, seed, crud, verify, burst, executions, api)"};
  app.require_subcommand(1);
  ModeRunner run;
  RegisterRawMode(app, &common, &run);
  RegisterSeedMode(app, &common, &run);
  RegisterCrudMode(app, &common, &run);
  RegisterVerifyMode(app, &common, &run);
  RegisterBurstMode(app, &common, &run);
  RegisterCatchUpMode(app, &common, &run);
  RegisterApiMode(app, &common, &run);
  RegisterExecutionsMode(app, &common, &run);
  CLI11_PARSE(app, argc, argv);
  if (!run) return 2;
  try {
    return run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "belfry-loadtest: {}\n", e.what());
    return 2;
  }
}
