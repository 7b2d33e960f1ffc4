// `belfry reshard`: grows a running cluster's shard count (docs/resharding.md).
#pragma once

#include <cstdint>

#include "belfry/config.h"

namespace belfry {

struct ReshardArgs {
  int32_t to = 0;           // 0: only report the status
  int64_t lead_ms = 120'000;  // the cut-over minute starts at least this long after the move ends
};

// Begins (or carries on with) a reshard to args.to: creates the partitions, moves each old shard
// in its own transaction, then records the cut-over minute. Prints its progress and the record.
// Run again after a failure: it carries on from the record. With args.to == 0, prints the record.
int RunReshard(const Config& cfg, const ReshardArgs& args);

}  // namespace belfry
