#include "core/commit_queue.h"

#include <gtest/gtest.h>

namespace belfry {
namespace {

CommitQueue::Offsets At(int32_t partition, int64_t next) { return {{{"cmds", partition}, next}}; }

TEST(CommitQueueTest, NothingIsCommittableBeforeTheFrontSettles) {
  CommitQueue q;
  const uint64_t first = q.Push(At(0, 10));
  const uint64_t second = q.Push(At(0, 20));
  q.MarkSettled(second);
  // The second batch is acknowledged, but committing 20 would also commit the first batch's
  // messages, whose records are still in flight.
  CommitQueue::Committable c = q.PopCommittable();
  EXPECT_TRUE(c.offsets.empty());
  EXPECT_TRUE(c.tickets.empty());
  EXPECT_EQ(q.size(), 2u);

  q.MarkSettled(first);
  c = q.PopCommittable();
  EXPECT_EQ(c.tickets, (std::vector<uint64_t>{first, second}));
  ASSERT_EQ(c.offsets.size(), 1u);
  EXPECT_EQ(c.offsets.at({"cmds", 0}), 20);
  EXPECT_TRUE(q.empty());
}

TEST(CommitQueueTest, PopsOnlyTheSettledPrefix) {
  CommitQueue q;
  const uint64_t a = q.Push(At(0, 5));
  const uint64_t b = q.Push(At(1, 7));
  const uint64_t c = q.Push(At(0, 9));
  q.MarkSettled(a);
  q.MarkSettled(c);
  EXPECT_EQ(q.settled_waiting(), 2u);
  CommitQueue::Committable out = q.PopCommittable();
  EXPECT_EQ(out.tickets, (std::vector<uint64_t>{a}));
  EXPECT_EQ(out.offsets, At(0, 5));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.settled_waiting(), 1u);  // c, behind b
  // Popping again without news changes nothing.
  EXPECT_TRUE(q.PopCommittable().tickets.empty());
  q.MarkSettled(b);
  out = q.PopCommittable();
  EXPECT_EQ(out.tickets, (std::vector<uint64_t>{b, c}));
  EXPECT_EQ(out.offsets.at({"cmds", 0}), 9);
  EXPECT_EQ(out.offsets.at({"cmds", 1}), 7);
  EXPECT_EQ(q.settled_waiting(), 0u);
}

TEST(CommitQueueTest, MergesTheHighestOffsetPerPartition) {
  CommitQueue q;
  CommitQueue::Offsets first = At(0, 30);
  first[{"cmds", 2}] = 4;
  const uint64_t x = q.Push(first);
  // A later batch can carry a lower position for a partition after a rewind (re-delivery from
  // the committed offset); the merged result never goes backwards within one pop.
  CommitQueue::Offsets second = At(0, 12);
  second[{"other", 0}] = 1;
  const uint64_t y = q.Push(second);
  q.MarkSettled(y);
  q.MarkSettled(x);
  const CommitQueue::Committable out = q.PopCommittable();
  EXPECT_EQ(out.offsets.size(), 3u);
  EXPECT_EQ(out.offsets.at({"cmds", 0}), 30);
  EXPECT_EQ(out.offsets.at({"cmds", 2}), 4);
  EXPECT_EQ(out.offsets.at({"other", 0}), 1);
}

TEST(CommitQueueTest, TicketsIncreaseAndUnknownTicketsAreIgnored) {
  CommitQueue q;
  const uint64_t a = q.Push(At(0, 1));
  const uint64_t b = q.Push(At(0, 2));
  EXPECT_LT(a, b);
  q.MarkSettled(b + 100);
  EXPECT_TRUE(q.PopCommittable().tickets.empty());
  q.Clear();
  EXPECT_TRUE(q.empty());
  EXPECT_GT(q.Push(At(0, 3)), b);  // tickets are never reused, even after Clear
}

TEST(BatchIsReadyTest, NeverWithNothingInHand) {
  EXPECT_FALSE(BatchIsReady(0, 5000, 0, 50, true));
  EXPECT_FALSE(BatchIsReady(0, 5000, 1000, 50, true));
}

TEST(BatchIsReadyTest, FullBatchIsReady) {
  EXPECT_TRUE(BatchIsReady(5000, 5000, 0, 50, false));
  EXPECT_TRUE(BatchIsReady(1, 1, 0, 50, false));
}

TEST(BatchIsReadyTest, DrainedInputDoesNotWait) {
  EXPECT_TRUE(BatchIsReady(3, 5000, 0, 50, true));
  EXPECT_FALSE(BatchIsReady(3, 5000, 0, 50, false));
}

TEST(BatchIsReadyTest, FlowingInputIsCutAtTheWaitLimit) {
  EXPECT_FALSE(BatchIsReady(100, 5000, 49, 50, false));
  EXPECT_TRUE(BatchIsReady(100, 5000, 50, 50, false));
  EXPECT_TRUE(BatchIsReady(100, 5000, 0, 0, false));
}

}  // namespace
}  // namespace belfry
