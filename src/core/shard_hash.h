// The stable shard of a job: FNV-1a (64-bit) of the id bytes, modulo shard_count. Fixed forever:
// changing it would move every stored job.
#pragma once

#include <cstdint>
#include <string_view>

namespace belfry {

uint64_t Fnv1a64(std::string_view bytes);

// REQUIRES: shard_count > 0.
int32_t ShardForId(std::string_view id, int32_t shard_count);

}  // namespace belfry
