// ShardLayout: the shard layout record of a reshard (docs/resharding.md), as a plain value. Its
// rules are in core/shard_layout.h; a claim brings the record it was made under (ShardClaim).
#pragma once

#include <cstdint>

namespace belfry {

struct ShardLayout {
  enum class Phase {
    kStable,   // one layout: `from`
    kMoving,   // rows of old shards <= moved_through are stored under `to`; firing under `from`
    kCutover,  // stored under `to`; firing under `from` before cutover_minute, `to` from it on
  };
  int32_t from = 120;
  int32_t to = 0;  // 0 when kStable
  Phase phase = Phase::kStable;
  int32_t moved_through = -1;   // kMoving: the last old shard whose rows were moved
  int64_t cutover_minute = 0;   // kCutover: the first minute fired under `to`

  friend bool operator==(const ShardLayout&, const ShardLayout&) = default;
};


}  // namespace belfry
