#include "core/shard_hash.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace belfry {
namespace {

TEST(ShardHashTest, KnownFnvVectors) {
  // Reference values of 64-bit FNV-1a.
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(ShardHashTest, StableForever) {
  // Pinned values: if these change, every stored job would move shard.
  EXPECT_EQ(ShardForId("shipment-42-poll", 120), static_cast<int32_t>(Fnv1a64("shipment-42-poll") % 120));
  EXPECT_EQ(ShardForId("a", 120), static_cast<int32_t>(0xaf63dc4c8601ec8cULL % 120));
}

TEST(ShardHashTest, InRangeAndRoughlyUniform) {
  std::vector<int> counts(120, 0);
  for (int i = 0; i < 120'000; ++i) {
    const int32_t s = ShardForId("job-" + std::to_string(i), 120);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, 120);
    ++counts[s];
  }
  for (int c : counts) {
    EXPECT_GT(c, 800);
    EXPECT_LT(c, 1200);
  }
}

}  // namespace
}  // namespace belfry
