#include "app/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "app/json_message_flag.h"

namespace belfry {
namespace {

std::unique_ptr<spdlog::formatter> MakeLogFormatter(const LogConfig& cfg) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (cfg.format == "json") {
    // The message is the only free text in the line; %j escapes it (time, level, thread never
    // need escaping).
    formatter->add_flag<JsonMessageFlag>(kJsonMessageFlag);
    formatter->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","thread":%t,"msg":%j})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ %v");
  }
  return formatter;
}

}  // namespace

void SetUpLogging(const LogConfig& cfg, spdlog::sink_ptr sink) {
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("belfry", std::move(sink)));
  spdlog::set_formatter(MakeLogFormatter(cfg));
  spdlog::set_level(spdlog::level::from_str(cfg.level));
  spdlog::flush_on(spdlog::level::warn);
}

}  // namespace belfry
