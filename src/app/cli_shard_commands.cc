// `belfry shards` (each shard's progress: fired-through minute, claim, lag, debt) and
// `belfry explain` (the plan of the tick query one shard runs for one minute).
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "app/system_clock.h"
#include "core/iso_time.h"
#include "core/layout_due_query.h"
#include "core/resource_views.h"
#include "core/shard_lag.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "pg/pg_job_store.h"
#include "pg/pg_shard_ledger.h"

namespace belfry {

int RunShards(const Config& cfg, bool json) {
  PgShardLedger ledger(cfg.database_url);
  const StatusOr<ShardLayout> layout = ledger.ReadLayout();
  if (!layout.ok()) return Fail(layout.status().message());
  auto states = ledger.LoadStates();
  if (!states.ok()) return Fail(states.status().message());
  const EpochMs now = SystemClock().NowMs();
  if (json) {
    std::printf("%s\n", EncodeShardsView(*states, *layout, now).c_str());
    return 0;
  }
  std::printf("%5s %-20s %8s %6s %-32s %s\n", "SHARD", "FIRED THROUGH", "LAG", "DEBT", "CLAIMED BY", "");
  for (const ShardState& s : *states) {
    const ShardLag lag = ComputeShardLag(s, now, *layout);
    const int64_t lag_s = static_cast<int64_t>(lag.lag_seconds.value_or(0));
    std::printf("%5d %-20s %7llds %6lld %-32s %s\n", s.shard,
                s.fired_through ? FormatIsoTime(MinuteStartMs(*s.fired_through)).substr(0, 16).c_str() : "never",
                static_cast<long long>(lag_s), static_cast<long long>(s.debt_minutes),
                s.claim_node.empty() ? "-" : s.claim_node.c_str(), s.claim_live ? "(live)" : "");
  }
  return 0;
}

int RunExplain(const Config& cfg, int shard, const std::string& at) {
  EpochMs t = SystemClock().NowMs();
  if (!at.empty()) {
    auto parsed = ParseIsoTime(at);
    if (!parsed) return Fail(fmt::format("--at: '{}' is not an ISO-8601 time", at), 64);
    t = *parsed;
  }
  const int64_t minute = EpochMinuteOf(t);
  // The query the firer would run: by the database's shard layout for that minute
  // (docs/resharding.md), which decides the shard count and tick, not the config's.
  StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
  if (!layout.ok()) return Fail(layout.status().message());
  const MinuteLayout firing = FiringLayout(*layout, minute);
  if (shard >= firing.shard_count) {
    return Fail(fmt::format("--shard must be below the shard count of that minute ({})", firing.shard_count), 64);
  }
  const DueQuery q = LayoutDueQuery(*layout, cfg.scheduler.intervals, shard, minute, minute);
  PgJobStore store(cfg.database_url);
  auto plan = store.ExplainDueQuery(q);
  if (!plan.ok()) return Fail(plan.status().message());
  std::printf("tick query for shard %d, minute %s:\n%s\n", shard, FormatIsoTime(MinuteStartMs(minute)).c_str(),
              plan->c_str());
  return 0;
}

}  // namespace belfry
