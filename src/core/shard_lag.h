// ShardLag: how far a shard is from having fired everything due, for the admin API's shard view
// and `belfry shards`: one computation for both.
#pragma once

#include <cstdint>
#include <optional>

#include "belfry/clock.h"
#include "belfry/shard_layout.h"
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

// Each minute's slot is the layout record's (core/shard_layout.h): a shard that does not fire
// yet (a new shard before the cut-over) is behind by its debt only.
ShardLag ComputeShardLag(const ShardState& s, EpochMs now, const ShardLayout& layout);

}  // namespace belfry
