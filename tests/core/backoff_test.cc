// Backoff: ceilings, growth, cap, equal-jitter bounds and spread, overflow, reset.
#include "core/backoff.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace belfry {
namespace {

constexpr BackoffPolicy kPolicy{100, 5000};

TEST(BackoffCeilingTest, DoublesFromInitialUpToTheCap) {
  const std::vector<int64_t> want = {100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(BackoffCeilingMs(kPolicy, static_cast<int64_t>(i) + 1), want[i]) << "failure " << i + 1;
  }
  EXPECT_EQ(BackoffCeilingMs(kPolicy, 0), 100);  // before any failure: the first ceiling
}

TEST(BackoffCeilingTest, NeverOverflows) {
  for (int64_t failures : {int64_t{62}, int64_t{63}, int64_t{64}, int64_t{1000}, INT64_MAX}) {
    EXPECT_EQ(BackoffCeilingMs(kPolicy, failures), 5000);
    EXPECT_EQ(BackoffCeilingMs(BackoffPolicy{1, INT64_MAX}, failures),
              failures >= 64 ? INT64_MAX : int64_t{1} << (failures - 1));
    EXPECT_EQ(BackoffCeilingMs(BackoffPolicy{INT64_MAX / 3, INT64_MAX}, failures), INT64_MAX);
  }
  EXPECT_EQ(BackoffCeilingMs(BackoffPolicy{1, INT64_MAX}, 63), int64_t{1} << 62);
}

TEST(BackoffCeilingTest, NormalizesNonsensicalPolicies) {
  EXPECT_EQ(BackoffCeilingMs(BackoffPolicy{0, 0}, 5), 1);
  EXPECT_EQ(BackoffCeilingMs(BackoffPolicy{-5, 8}, 4), 8);
  EXPECT_EQ(BackoffCeilingMs(BackoffPolicy{300, 100}, 3), 300);  // max below initial
}

TEST(JitteredBackoffTest, StaysWithinTheUpperHalfOfTheCeiling) {
  for (int64_t failures = 1; failures <= 12; ++failures) {
    const int64_t c = BackoffCeilingMs(kPolicy, failures);
    for (uint64_t r : {uint64_t{0}, uint64_t{1}, uint64_t{12345}, UINT64_MAX, UINT64_MAX - 1}) {
      const int64_t d = JitteredBackoffMs(kPolicy, failures, r);
      EXPECT_GE(d, c - c / 2);
      EXPECT_LE(d, c);
    }
    EXPECT_EQ(JitteredBackoffMs(kPolicy, failures, 0), c - c / 2);                     // lo reached
    EXPECT_EQ(JitteredBackoffMs(kPolicy, failures, static_cast<uint64_t>(c / 2)), c);  // hi reached
  }
  EXPECT_EQ(JitteredBackoffMs(BackoffPolicy{1, 1}, 7, 999), 1);
  const int64_t huge = JitteredBackoffMs(BackoffPolicy{1, INT64_MAX}, INT64_MAX, UINT64_MAX);
  EXPECT_GE(huge, INT64_MAX - INT64_MAX / 2);
}

TEST(BackoffTest, GrowsToTheCapWithinBoundsForever) {
  Backoff b(kPolicy, 42);
  for (int64_t n = 1; n <= 10000; ++n) {
    const int64_t d = b.NextDelayMs();
    const int64_t c = BackoffCeilingMs(kPolicy, n);
    ASSERT_GE(d, c - c / 2) << "failure " << n;
    ASSERT_LE(d, c) << "failure " << n;
    ASSERT_EQ(b.failures(), n);
  }
}

TEST(BackoffTest, SameSeedSameWaitsDifferentSeedsDiverge) {
  Backoff a(kPolicy, 1);
  Backoff same(kPolicy, 1);
  Backoff other(kPolicy, 2);
  std::vector<int64_t> wa, ws, wo;
  for (int i = 0; i < 20; ++i) {
    wa.push_back(a.NextDelayMs());
    ws.push_back(same.NextDelayMs());
    wo.push_back(other.NextDelayMs());
  }
  EXPECT_EQ(wa, ws);
  EXPECT_NE(wa, wo);
  int differing = 0;
  for (size_t i = 0; i < wa.size(); ++i) differing += wa[i] != wo[i] ? 1 : 0;
  EXPECT_GE(differing, 15) << "two nodes must not retry in lockstep";
}

TEST(BackoffTest, JitterSpreadsManyNodesOverTheWholeRange) {
  // 1000 nodes failing together, each seeded differently: at the cap, their waits cover
  // [2500, 5000] rather than bunching.
  std::set<int64_t> waits;
  int64_t lo = INT64_MAX, hi = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    Backoff b(kPolicy, seed * 7919 + 3);
    int64_t d = 0;
    for (int i = 0; i < 8; ++i) d = b.NextDelayMs();
    waits.insert(d);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_GE(waits.size(), 600u);
  EXPECT_GE(lo, 2500);
  EXPECT_LT(lo, 2600);
  EXPECT_LE(hi, 5000);
  EXPECT_GT(hi, 4900);
}

TEST(BackoffTest, ResetStartsOverButNotWithTheSameWaits) {
  Backoff b(kPolicy, 9);
  std::vector<int64_t> first, second;
  for (int i = 0; i < 12; ++i) first.push_back(b.NextDelayMs());
  b.Reset();
  EXPECT_EQ(b.failures(), 0);
  for (int i = 0; i < 12; ++i) second.push_back(b.NextDelayMs());
  EXPECT_GE(second[0], 50);
  EXPECT_LE(second[0], 100);
  EXPECT_NE(first, second);
  EXPECT_EQ(b.failures(), 12);
}

}  // namespace
}  // namespace belfry
