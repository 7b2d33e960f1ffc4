// ShardLag: how far a shard is from having fired everything due, for the admin API's shard view
// and `belfry shards`: one computation for both.
#pragma once

#include <cstdint>
#include <optional>

#include "belfry/clock.h"
#include "belfry/shard_ledger.h"

namespace belfry {

struct ShardLag {
  // Minutes due and not fired: those past the watermark plus the catch-up debt. nullopt for a
  // shard that never fired.
  std::optional<int64_t> behind_minutes;
  // now - the slot of the oldest minute still owed (past the watermark or in the debt), in
  // seconds; 0 when nothing is owed; nullopt for a shard that never fired.
  std::optional<double> lag_seconds;
};

ShardLag ComputeShardLag(const ShardState& s, EpochMs now, int64_t tick_ms);

}  // namespace belfry
