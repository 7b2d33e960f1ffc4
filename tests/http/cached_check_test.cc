#include "http/cached_check.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "fakes/fake_clock.h"

namespace belfry {
namespace {

// A check whose runs the test releases one at a time, and can wait for.
class GatedCheck {
 public:
  Status operator()() {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_ >= entered_; });
    return result;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    ++released_;
    changed_.notify_all();
  }
  void AwaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(changed_.wait_for(lock, std::chrono::seconds(5), [&] { return entered_ >= n; }));
  }
  Status result;

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int entered_ = 0;
  int released_ = 0;
};

// Waits (up to 5 s) until `n` checks have stored their result.
void AwaitFinished(const CachedCheck& cached, int64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (cached.checks_finished() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(cached.checks_finished(), n);
}

TEST(CachedCheckTest, RunsAtMostOncePerIntervalAndNeverWaits) {
  FakeClock clock(1'000'000);
  GatedCheck gate;
  CachedCheck cached([&] { return gate(); }, clock, 1000, 10'000);
  // The first check runs in the background; until it finishes, not ready, and no wait.
  Status first = cached.Get();
  EXPECT_TRUE(first.retryable()) << first.ToString();
  gate.AwaitEntered(1);
  EXPECT_TRUE(cached.Get().retryable());
  gate.Release();
  AwaitFinished(cached, 1);
  EXPECT_TRUE(cached.Get().ok());
  // Many callers from many threads within the interval: still one check.
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) EXPECT_TRUE(cached.Get().ok());
    });
  }
  for (std::thread& t : callers) t.join();
  clock.Advance(999);
  EXPECT_TRUE(cached.Get().ok());
  EXPECT_EQ(cached.checks_started(), 1);
  // A second later, the next caller starts a check and gets the cached answer meanwhile.
  clock.Advance(1);
  gate.result = Status::Retryable("connection refused");
  EXPECT_TRUE(cached.Get().ok());
  EXPECT_EQ(cached.checks_started(), 2);
  gate.Release();
  AwaitFinished(cached, 2);
  EXPECT_EQ(cached.Get().message(), "connection refused");
  EXPECT_EQ(cached.checks_started(), 2);
}

TEST(CachedCheckTest, AHangingCheckIsNotReadyOnceStale) {
  FakeClock clock(0);
  GatedCheck gate;
  CachedCheck cached([&] { return gate(); }, clock, 1000, 10'000);
  (void)cached.Get();
  gate.Release();
  AwaitFinished(cached, 1);
  ASSERT_TRUE(cached.Get().ok());
  clock.Advance(1000);
  EXPECT_TRUE(cached.Get().ok());  // starts check 2, which hangs (a blackholed database)
  gate.AwaitEntered(2);
  clock.Advance(9999);
  EXPECT_TRUE(cached.Get().ok());
  clock.Advance(1);
  const Status stale = cached.Get();
  EXPECT_TRUE(stale.retryable());
  EXPECT_NE(stale.message().find("has not answered for 10 s"), std::string::npos) << stale.ToString();
  EXPECT_EQ(cached.checks_started(), 2);  // no pile-up of checks behind the hanging one
  gate.Release();
}

TEST(CachedCheckTest, AwaitFirstResultWaitsForTheFirstCheckOnly) {
  FakeClock clock(0);
  GatedCheck gate;
  gate.result = Status::Retryable("schema behind");
  CachedCheck cached([&] { return gate(); }, clock, 1000, 10'000);
  EXPECT_FALSE(cached.AwaitFirstResult(std::chrono::milliseconds(20)));  // the check hangs: bounded
  EXPECT_TRUE(cached.Get().retryable());
  std::thread release([&] {
    gate.AwaitEntered(1);
    gate.Release();
  });
  EXPECT_TRUE(cached.AwaitFirstResult(std::chrono::seconds(5)));
  release.join();
  const Status first = cached.Get();  // the check's own result, not "not finished yet"
  EXPECT_NE(first.message().find("schema behind"), std::string::npos) << first.ToString();
  EXPECT_EQ(cached.checks_started(), 1);
}

}  // namespace
}  // namespace belfry
