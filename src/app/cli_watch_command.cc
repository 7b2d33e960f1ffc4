// `belfry watch`: the records arriving on topics, each trigger with its lateness, until Ctrl-C.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "app/system_clock.h"
#include "belfry/stop_signal.h"
#include "core/iso_time.h"
#include "kafka/topic_tail.h"

namespace belfry {

int RunWatch(const Config& cfg, const std::vector<std::string>& topics, bool from_beginning) {
  StopSignal stop;
  TopicTailOptions options;
  options.from_beginning = from_beginning;
  auto tail = TopicTail::Create(cfg.kafka, topics, options);
  if (!tail.ok()) return Fail(tail.status().message());
  std::signal(SIGINT, [](int) { std::_Exit(0); });
  std::signal(SIGTERM, [](int) { std::_Exit(0); });
  SystemClock clock;
  std::fprintf(stderr, "watching %zu topic(s); Ctrl-C to stop\n", topics.size());
  (*tail)->Run(stop, [&clock](const TailRecord& r) {
    const EpochMs now = clock.NowMs();
    auto it = r.headers.find("belfry-scheduled-for");
    std::string late = "";
    if (it != r.headers.end()) {
      const long long scheduled = std::atoll(it->second.c_str());
      late = fmt::format(" scheduledFor={} late={}ms", FormatIsoTime(scheduled), now - scheduled);
    }
    std::printf("%s %s key=%s%s %s\n", FormatIsoTime(now).substr(11).c_str(), r.topic.c_str(),
                r.key.value_or("").c_str(), late.c_str(), r.value.value_or("null").c_str());
    std::fflush(stdout);
  });
  return 0;
}

}  // namespace belfry
