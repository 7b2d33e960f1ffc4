#include "core/batch_bisection.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace belfry {
namespace {

// A store that refuses, for good, any transaction holding one of `bad`, and otherwise applies it.
struct FakeStore {
  std::set<size_t> bad;
  std::vector<size_t> applied;  // items, in apply order
  int stop_at_call = -1;        // the call (1-based) that sees stop requested
  int calls = 0;

  std::optional<Status> Apply(size_t first, size_t last) {
    if (++calls == stop_at_call) return std::nullopt;
    for (size_t i = first; i < last; ++i) {
      if (bad.count(i) != 0) return Status::Invalid("sql", "refused item " + std::to_string(i));
    }
    for (size_t i = first; i < last; ++i) applied.push_back(i);
    return Status::Ok();
  }
  ApplyRange Fn() {
    return [this](size_t first, size_t last) { return Apply(first, last); };
  }
};

std::vector<size_t> AllBut(size_t n, const std::set<size_t>& bad) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (bad.count(i) == 0) out.push_back(i);
  }
  return out;
}

TEST(BatchBisectionTest, AGoodBatchIsOneApply) {
  FakeStore store;
  const BisectionResult r = ApplyIsolatingRefusals(100, store.Fn());
  EXPECT_FALSE(r.stopped);
  EXPECT_TRUE(r.refused.empty());
  EXPECT_EQ(r.applies, 1);
  EXPECT_EQ(store.applied, AllBut(100, {}));
}

TEST(BatchBisectionTest, AnEmptyBatchAppliesNothing) {
  FakeStore store;
  const BisectionResult r = ApplyIsolatingRefusals(0, store.Fn());
  EXPECT_EQ(r.applies, 0);
  EXPECT_FALSE(r.stopped);
}

TEST(BatchBisectionTest, OneCulpritStandsAloneAndTheRestAppliesInOrder) {
  for (size_t culprit : {size_t{0}, size_t{37}, size_t{99}}) {
    FakeStore store;
    store.bad = {culprit};
    const BisectionResult r = ApplyIsolatingRefusals(100, store.Fn());
    EXPECT_FALSE(r.stopped);
    ASSERT_EQ(r.refused.size(), 1u);
    EXPECT_EQ(r.refused[0].index, culprit);
    EXPECT_EQ(r.refused[0].status.message(), "refused item " + std::to_string(culprit));
    EXPECT_TRUE(IsPermanentStoreError(r.refused[0].status));
    EXPECT_EQ(store.applied, AllBut(100, store.bad));
    // The batch, then two halves per level down to the culprit: at most 1 + 2*ceil(log2(100)).
    EXPECT_LE(r.applies, 1 + 2 * 7);
  }
}

TEST(BatchBisectionTest, SeveralCulpritsAreEachRefusedOnce) {
  FakeStore store;
  store.bad = {3, 4, 50, 63};
  const BisectionResult r = ApplyIsolatingRefusals(64, store.Fn());
  std::vector<size_t> refused;
  for (const RefusedItem& item : r.refused) refused.push_back(item.index);
  EXPECT_EQ(refused, (std::vector<size_t>{3, 4, 50, 63}));
  EXPECT_EQ(store.applied, AllBut(64, store.bad));
}

TEST(BatchBisectionTest, ASingleRefusedItem) {
  FakeStore store;
  store.bad = {0};
  const BisectionResult r = ApplyIsolatingRefusals(1, store.Fn());
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.applies, 1);
  EXPECT_TRUE(store.applied.empty());
}

TEST(BatchBisectionTest, StopEndsTheBisectionAndSaysSo) {
  FakeStore store;
  store.bad = {90};
  store.stop_at_call = 3;  // the whole batch, the left half (applied), then stop
  const BisectionResult r = ApplyIsolatingRefusals(100, store.Fn());
  EXPECT_TRUE(r.stopped);
  EXPECT_TRUE(r.refused.empty());
  EXPECT_EQ(store.calls, 3);
}

TEST(BatchBisectionTest, OnlyInvalidIsPermanent) {
  EXPECT_TRUE(IsPermanentStoreError(Status::Invalid("sql", "x")));
  EXPECT_FALSE(IsPermanentStoreError(Status::Retryable("x")));
  EXPECT_FALSE(IsPermanentStoreError(Status::FailedPrecondition("x")));
  EXPECT_FALSE(IsPermanentStoreError(Status::Ok()));
}

}  // namespace
}  // namespace belfry
