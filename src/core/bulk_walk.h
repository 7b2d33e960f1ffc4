// BulkWalk: where a bulk operation's walk over the jobs goes next (docs/bulk-operations.md). The
// walk visits shards 0..shard_count-1 in order and each shard's matching jobs in id order, a
// bounded page at a time; its position is (shard, after_id), stored with the operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace belfry {

struct BulkWalkPosition {
  int32_t shard = 0;
  std::string after_id;  // the next page starts after this id ("" = the shard's start)
  bool finished = false;  // every shard visited
};

// The position after a page of `page_rows` matching jobs of `shard` that ended at `last_id`, read
// with a limit of `page_limit`: a short page means the shard has no more, and the walk moves to
// the next shard (finished after the last one); a full page continues after its last id.
BulkWalkPosition NextBulkWalkPosition(int32_t shard, std::string_view last_id, size_t page_rows, size_t page_limit,
                                      int32_t shard_count);

// The position after a whole shard was visited at once (a dry run counts a shard per query).
BulkWalkPosition NextBulkWalkShard(int32_t shard, int32_t shard_count);

}  // namespace belfry
