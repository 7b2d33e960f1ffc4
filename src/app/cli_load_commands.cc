// `belfry load` (the triggers the stored schedules will fire in a window, per minute, shard and
// second) and `belfry rebalance --dry-run` (offset moves that flatten the busiest minute),
// docs/load-projection.md.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "app/system_clock.h"
#include "core/iso_time.h"
#include "core/load_projection.h"
#include "core/load_rebalance.h"
#include "core/slot_math.h"
#include "pg/pg_job_store.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {

int RunRebalance(const Config& cfg, int example_ids, bool json) {
  PgJobStore store(cfg.database_url);
  StatusOr<RebalancePlan> plan = ProposeRebalance(store, example_ids);
  if (!plan.ok()) return Fail(plan.status().message());
  if (json) {
    std::printf("%s\n", EncodeRebalancePlanJson(*plan).c_str());
    return 0;
  }
  const auto hhmm = [](int32_t d) { return fmt::format("{:02}:{:02}", d / 60, d % 60); };
  std::printf("interval jobs: %lld (%lld pinned, %lld movable); %.0f triggers per minute on average\n",
              static_cast<long long>(plan->jobs), static_cast<long long>(plan->pinned),
              static_cast<long long>(plan->movable), plan->mean);
  std::printf("busiest minute of the UTC day now: %s with %lld; after the moves: %s with %lld\n",
              hhmm(plan->peak_minute_before).c_str(), static_cast<long long>(plan->peak_before),
              hhmm(plan->peak_minute_after).c_str(), static_cast<long long>(plan->peak_after));
  std::printf("%lld jobs to move (dry run: nothing changed)\n\n", static_cast<long long>(plan->jobs_moved));
  std::printf("%8s %6s %6s %10s  %s\n", "INTERVAL", "FROM", "TO", "JOBS", "EXAMPLES");
  for (const OffsetMove& m : plan->moves) {
    std::string examples;
    for (const std::string& id : m.example_ids) examples += (examples.empty() ? "" : " ") + id;
    std::printf("%7dm %6d %6d %10lld  %s\n", m.interval_minutes, m.from_offset, m.to_offset,
                static_cast<long long>(m.jobs), examples.c_str());
  }
  return 0;
}

int RunLoad(const Config& cfg, const std::string& from, const std::string& to, const std::string& by, int top,
            bool with_shards, bool json) {
  const StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
  if (!layout.ok()) return Fail(layout.status().message());
  StatusOr<LoadWindow> window = ParseLoadWindow(from, to, SystemClock().NowMs(), *layout, cfg.scheduler.intervals);
  if (!window.ok()) return Fail(window.status().message());
  const StatusOr<LoadBreakdown> breakdown = ParseLoadBreakdown(by);
  if (!breakdown.ok()) return Fail(breakdown.status().message(), 64);
  PgJobStore store(cfg.database_url);
  StatusOr<LoadGroups> read = store.ReadLoadGroups(LoadGroupQuery{window->first_minute, window->last_minute, by});
  if (!read.ok()) return Fail(read.status().message());
  const LoadProjection p = ProjectLoad(SystemTimeZones(), *window, *read);
  if (json) {
    std::printf("%s\n", EncodeLoadProjectionJson(p, by, with_shards, top).c_str());
    return 0;
  }
  std::printf("%-17s %10s %18s %18s\n", "MINUTE (UTC)", "TRIGGERS", "BUSIEST SHARD", "BUSIEST SECOND");
  int64_t peak = -1, peak_minute = window->first_minute;
  for (int64_t m = window->first_minute; m <= window->last_minute; ++m) {
    const LoadProjection::MinuteSummary sum = p.Summarize(m);
    if (sum.total > peak) peak = sum.total, peak_minute = m;
    std::printf("%-17s %10lld %18s %18s\n", FormatIsoTime(MinuteStartMs(m)).substr(0, 16).c_str(),
                static_cast<long long>(sum.total), fmt::format("{} ({})", sum.shard, sum.shard_triggers).c_str(),
                fmt::format(":{:02} ({})", sum.second, sum.second_triggers).c_str());
  }
  std::printf("total %lld triggers; busiest minute %s with %lld\n", static_cast<long long>(p.total),
              FormatIsoTime(MinuteStartMs(peak_minute)).substr(0, 16).c_str(), static_cast<long long>(peak));
  if (!by.empty()) {
    const std::string heading = breakdown->kind == LoadBreakdown::Kind::kLabel   ? "LABEL " + breakdown->label_key
                                : breakdown->kind == LoadBreakdown::Kind::kOwner ? "OWNER"
                                                                                 : "TOPIC";
    std::printf("\n%-40s %10s\n", heading.c_str(), "TRIGGERS");
    for (size_t i = 0; i < p.by_label.size() && i < static_cast<size_t>(top); ++i) {
      std::printf("%-40s %10lld\n", p.by_label[i].label.c_str(), static_cast<long long>(p.by_label[i].triggers));
    }
  }
  return 0;
}

}  // namespace belfry
