#include "http/worker_lane.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace belfry {
namespace {

// A lane's threads are idle from its construction: a task submitted before a thread has reached
// its first wait is taken, not refused (a lane of one thread and no queue refused the first
// request of a freshly started admin server on a loaded machine).
TEST(WorkerLaneTest, TakesATaskSubmittedRightAfterConstruction) {
  for (int i = 0; i < 200; ++i) {
    WorkerLane lane(1, 0);
    std::promise<void> ran;
    ASSERT_TRUE(lane.TrySubmit([&] { ran.set_value(); })) << "round " << i;
    ASSERT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  }
}

TEST(WorkerLaneTest, RefusesBeyondItsThreadsAndQueueAndTakesAgainOnceFree) {
  WorkerLane lane(2, 1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  auto blocking = [&] {
    started.fetch_add(1);
    released.wait();
  };
  EXPECT_TRUE(lane.TrySubmit(blocking));
  EXPECT_TRUE(lane.TrySubmit(blocking));
  EXPECT_TRUE(lane.TrySubmit(blocking));   // the one queue place
  EXPECT_FALSE(lane.TrySubmit(blocking));  // two running (or about to), one queued
  release.set_value();
  // Once every task has run, the lane takes new tasks again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(started.load(), 3);
  bool taken = false;
  while (!taken && std::chrono::steady_clock::now() < deadline) {
    taken = lane.TrySubmit([] {});
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(taken);
}

}  // namespace
}  // namespace belfry
