#include "core/unacked_triggers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fakes/fake_clock.h"

namespace belfry {
namespace {

std::vector<TriggerFailure> Failed(int n, size_t value_bytes = 10) {
  std::vector<TriggerFailure> out;
  for (int i = 0; i < n; ++i) {
    TriggerFailure f;
    f.job_id = std::to_string(i);
    f.job_id.insert(0, 1, 'j');  // not "j" + ...: GCC 12 warns of a false overlap (-Wrestrict)
    f.topic = "out";
    f.value = std::string(value_bytes, 'v');
    out.push_back(f);
  }
  return out;
}

TEST(UnackedTriggersTest, ATakeReturnsTheExactRangeOnceAndFreesItsBytes) {
  FakeClock clock(1'000'000);
  UnackedTriggers kept(clock);
  ASSERT_TRUE(kept.Keep(7, {100, 100}, ShardLayout{}, Failed(2)));
  EXPECT_GT(kept.bytes(), 0);
  EXPECT_FALSE(kept.Take(8, {100, 100}, ShardLayout{}).has_value()) << "another shard";
  auto got = kept.Take(7, {100, 100}, ShardLayout{});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 2u);
  EXPECT_FALSE(kept.Take(7, {100, 100}, ShardLayout{}).has_value()) << "used once";
  EXPECT_EQ(kept.bytes(), 0);
  EXPECT_EQ(kept.entries(), 0);
}

TEST(UnackedTriggersTest, AnEmptySetMeansEverythingWasAcknowledged) {
  FakeClock clock(1'000'000);
  UnackedTriggers kept(clock);
  ASSERT_TRUE(kept.Keep(7, {100, 100}, ShardLayout{}, {}));
  auto got = kept.Take(7, {100, 100}, ShardLayout{});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->empty());
}

TEST(UnackedTriggersTest, AnOverlappingOtherRangeALayoutChangeOrAgeDropTheEntry) {
  FakeClock clock(1'000'000);
  UnackedTriggers kept(clock, 1 << 20, 60'000);
  std::string_view why;
  ASSERT_TRUE(kept.Keep(7, {100, 100}, ShardLayout{}, Failed(1)));
  EXPECT_FALSE(kept.Take(7, {99, 101}, ShardLayout{}, &why).has_value());
  EXPECT_EQ(why, UnackedTriggers::kRangeChanged);
  EXPECT_EQ(kept.entries(), 0);

  ASSERT_TRUE(kept.Keep(7, {100, 100}, ShardLayout{}, Failed(1)));
  ShardLayout moving;
  moving.to = 240;
  moving.phase = ShardLayout::Phase::kMoving;
  EXPECT_FALSE(kept.Take(7, {100, 100}, moving, &why).has_value());
  EXPECT_EQ(why, UnackedTriggers::kLayoutChanged);

  ASSERT_TRUE(kept.Keep(7, {100, 100}, ShardLayout{}, Failed(1)));
  ASSERT_TRUE(kept.Keep(7, {102, 102}, ShardLayout{}, Failed(1)));
  EXPECT_FALSE(kept.Take(7, {101, 101}, ShardLayout{}, &why).has_value()) << "no overlap: both stay";
  EXPECT_EQ(kept.entries(), 2);
  clock.Advance(60'001);
  why = {};
  EXPECT_FALSE(kept.Take(7, {100, 100}, ShardLayout{}, &why).has_value());
  EXPECT_EQ(why, UnackedTriggers::kExpired);
  // A Keep sweeps the expired entries no retry will take (minute 102's range was fired elsewhere).
  ASSERT_TRUE(kept.Keep(8, {100, 100}, ShardLayout{}, {}));
  EXPECT_EQ(kept.entries(), 1);
}

TEST(UnackedTriggersTest, WhatDoesNotFitTheBoundIsNotKept) {
  FakeClock clock(1'000'000);
  UnackedTriggers kept(clock, 4'000);
  ASSERT_TRUE(kept.Keep(1, {100, 100}, ShardLayout{}, Failed(2, 1'000)));
  EXPECT_FALSE(kept.Keep(2, {100, 100}, ShardLayout{}, Failed(2, 1'000)));
  EXPECT_FALSE(kept.Take(2, {100, 100}, ShardLayout{}).has_value());
  EXPECT_TRUE(kept.Take(1, {100, 100}, ShardLayout{}).has_value());
  EXPECT_EQ(kept.bytes(), 0);
  // Replacing an entry frees the old one's bytes first.
  ASSERT_TRUE(kept.Keep(1, {100, 100}, ShardLayout{}, Failed(2, 1'000)));
  ASSERT_TRUE(kept.Keep(1, {100, 100}, ShardLayout{}, Failed(3, 1'000)));
  EXPECT_EQ(kept.entries(), 1);
}

TEST(UnackedTriggersTest, DropShardDropsOnlyThatShard) {
  FakeClock clock(1'000'000);
  UnackedTriggers kept(clock);
  ASSERT_TRUE(kept.Keep(1, {100, 100}, ShardLayout{}, Failed(1)));
  ASSERT_TRUE(kept.Keep(1, {101, 101}, ShardLayout{}, Failed(1)));
  ASSERT_TRUE(kept.Keep(2, {100, 100}, ShardLayout{}, Failed(1)));
  EXPECT_EQ(kept.DropShard(1), 2);
  EXPECT_EQ(kept.entries(), 1);
  EXPECT_TRUE(kept.Take(2, {100, 100}, ShardLayout{}).has_value());
}

}  // namespace
}  // namespace belfry
