// LayoutDueQuery: the due query of one firing shard over minutes of one shard layout, as the
// firer runs it and `belfry explain` shows it (docs/resharding.md, "The due query selects by the
// minute's layout and the stored layout").
#pragma once

#include <cstdint>
#include <vector>

#include "belfry/job_store.h"
#include "belfry/shard_layout.h"

namespace belfry {

// Firing shard `shard` over minutes [first, last]: that layout's tick, the interval terms of
// `intervals` for those minutes, and the stored shards the query reads. No read fence (a claim's
// firing adds its own).
// REQUIRES: [first, last] is fired under one layout (LastMinuteOfSameLayout(layout, first, last)
// == last) and 0 <= shard < FiringLayout(layout, first).shard_count.
DueQuery LayoutDueQuery(const ShardLayout& layout, const std::vector<int32_t>& intervals, int32_t shard,
                        int64_t first, int64_t last);

}  // namespace belfry
