#include "app/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace belfry {

void SetUpLogging(const LogConfig& cfg) {
  auto logger = spdlog::stderr_logger_mt("belfry");
  spdlog::set_default_logger(logger);
  if (cfg.format == "json") {
    // Messages never contain raw user input unescaped: they go through fmt with sanitised values.
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","thread":%t,"msg":"%v"})",
                        spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_level(spdlog::level::from_str(cfg.level));
  spdlog::flush_on(spdlog::level::warn);
}

}  // namespace belfry
