#include "core/bulk_walk.h"

namespace belfry {

BulkWalkPosition NextBulkWalkShard(int32_t shard, int32_t shard_count) {
  BulkWalkPosition next;
  next.shard = shard + 1;
  next.finished = next.shard >= shard_count;
  return next;
}

BulkWalkPosition NextBulkWalkPosition(int32_t shard, std::string_view last_id, size_t page_rows, size_t page_limit,
                                      int32_t shard_count) {
  if (page_rows < page_limit || page_rows == 0) return NextBulkWalkShard(shard, shard_count);
  BulkWalkPosition next;
  next.shard = shard;
  next.after_id = std::string(last_id);
  return next;
}

}  // namespace belfry
