#include "app/reshard_command.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "app/system_clock.h"
#include "core/iso_time.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "pg/pg_reshard.h"

namespace belfry {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "belfry reshard: %s\n", message.c_str());
  return 1;
}

void Print(const ShardLayout& l) {
  switch (l.phase) {
    case ShardLayout::Phase::kStable:
      std::printf("shard layout: %d shards at %lld ms, no reshard under way\n", l.from,
                  static_cast<long long>(TickMsOf(l.from)));
      return;
    case ShardLayout::Phase::kMoving:
      std::printf("shard layout: %d -> %d, moving: %d of %d old shards moved\n", l.from, l.to, l.moved_through + 1,
                  l.from);
      return;
    case ShardLayout::Phase::kCutover:
      std::printf("shard layout: %d -> %d, cut over at %s: %d shards at %lld ms from then on\n", l.from, l.to,
                  FormatIsoTime(MinuteStartMs(l.cutover_minute)).c_str(), l.to, static_cast<long long>(TickMsOf(l.to)));
      return;
  }
}

}  // namespace

int RunReshard(const Config& cfg, const ReshardArgs& args) {
  PgReshard reshard(cfg.database_url);
  if (args.to == 0) {
    StatusOr<ShardLayout> l = reshard.Read();
    if (!l.ok()) return Fail(l.status().message());
    Print(*l);
    return 0;
  }
  StatusOr<ShardLayout> begun = reshard.Begin(args.to);
  if (!begun.ok()) return Fail(begun.status().message());
  Print(*begun);
  int64_t moved = 0;
  for (ShardLayout l = *begun; l.phase == ShardLayout::Phase::kMoving && l.moved_through + 1 < l.from;) {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<int64_t> n = reshard.MoveNextShard();
    if (!n.ok()) return Fail(fmt::format("{} (run again to carry on)", n.status().message()));
    moved += *n;
    StatusOr<ShardLayout> now = reshard.Read();
    if (!now.ok()) return Fail(now.status().message());
    l = *now;
    std::printf("moved old shard %d: %lld jobs in %lld ms (%lld in all)\n", l.moved_through, static_cast<long long>(*n),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count()),
                static_cast<long long>(moved));
  }
  SystemClock clock;
  StatusOr<ShardLayout> cut = reshard.CutOver(clock.NowMs(), args.lead_ms);
  if (!cut.ok()) return Fail(cut.status().message());
  Print(*cut);
  return 0;
}

}  // namespace belfry
