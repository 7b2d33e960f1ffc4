#include "core/shard_hash.h"

namespace belfry {

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

int32_t ShardForId(std::string_view id, int32_t shard_count) {
  return static_cast<int32_t>(Fnv1a64(id) % static_cast<uint64_t>(shard_count));
}

}  // namespace belfry
