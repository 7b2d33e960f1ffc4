#include "core/layout_due_query.h"

#include "core/shard_layout.h"
#include "core/slot_math.h"

namespace belfry {

DueQuery LayoutDueQuery(const ShardLayout& layout, const std::vector<int32_t>& intervals, int32_t shard,
                        int64_t first, int64_t last) {
  DueQuery q;
  q.shard = shard;
  q.first_minute = first;
  q.last_minute = last;
  q.tick_ms = FiringLayout(layout, first).tick_ms;
  q.terms = first == last ? TermsForMinute(intervals, first) : TermsForRange(intervals, first, last);
  q.stored_shards = StoredShardsOf(layout, first, shard);
  return q;
}

}  // namespace belfry
