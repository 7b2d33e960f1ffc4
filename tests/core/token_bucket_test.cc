#include "core/token_bucket.h"

#include <gtest/gtest.h>

#include "core/rate_limiter.h"
#include "fakes/fake_clock.h"

namespace belfry {
namespace {

constexpr EpochMs kT = 1'795'354'620'000LL;

TEST(TokenBucketTest, StartsFullThenPaysTheDeficitAtTheRate) {
  TokenBucket b(1000, 100, kT);  // 1 token per ms, 100 at most
  EXPECT_EQ(b.Take(100, kT), kT);
  EXPECT_EQ(b.Tokens(kT), 0);
  EXPECT_EQ(b.Take(50, kT), kT + 50);
  EXPECT_EQ(b.Tokens(kT), -50);
  EXPECT_EQ(b.Tokens(kT + 50), 0);
  EXPECT_EQ(b.Take(1, kT + 50), kT + 51);
}

TEST(TokenBucketTest, RefillsUpToTheBurstOnly) {
  TokenBucket b(10, 5, kT);
  b.Take(5, kT);
  EXPECT_EQ(b.Tokens(kT + 3'600'000), 5);  // an hour idle: still only the burst
  EXPECT_EQ(b.Take(5, kT + 3'600'000), kT + 3'600'000);
  EXPECT_EQ(b.Take(1, kT + 3'600'000), kT + 3'600'000 + 100);  // 10/s: 100 ms a token
}

TEST(TokenBucketTest, FractionalRatesRoundTheWaitUp) {
  TokenBucket b(3, 1, kT);
  b.Take(1, kT);
  EXPECT_EQ(b.Take(1, kT), kT + 334);  // 1/3 s, rounded up to the ms
}

TEST(TokenBucketTest, ZeroRateIsUnlimitedAndTimeNeverRunsBackwards) {
  TokenBucket unlimited(0, 1, kT);
  EXPECT_EQ(unlimited.Take(1'000'000'000, kT), kT);
  TokenBucket b(1000, 10, kT);
  b.Take(10, kT + 100);
  EXPECT_EQ(b.Take(10, kT), kT + 110);  // an earlier `now` counts as kT + 100
}

TEST(TokenBucketTest, AveragesTheRateOverALongRun) {
  TokenBucket b(50'000, 5'000, kT);
  EpochMs t = kT;
  for (int i = 0; i < 1000; ++i) t = b.Take(1000, t);  // take 1000, wait as told, repeat
  // 1M tokens at 50k/s: 20 s, less the 5k burst it started with.
  EXPECT_EQ(t - kT, 19'900);
}

TEST(TokenBucketTest, SetRateKeepsWhatAccruedAndPaysADeficitAtTheNewRate) {
  TokenBucket b(1000, 100, kT);
  b.Take(100, kT);
  b.SetRate(100, 10, kT + 50);  // 50 accrued at 1000/s, cut to the new burst of 10
  EXPECT_EQ(b.Tokens(kT + 50), 10);
  EXPECT_EQ(b.Take(20, kT + 50), kT + 150);  // 10 owed, at 100/s: 100 ms
  b.SetRate(1000, 100, kT + 60);              // 1 of the 10 paid; the other 9 at 1000/s
  EXPECT_EQ(b.Take(0, kT + 60), kT + 69);
}

TEST(RateLimiterTest, WaitsThroughTheClockAndStopsOnRequest) {
  FakeClock clock(kT);
  StopSignal stop;
  RateLimiter limiter(100, clock, stop);  // bucket of 10, grants of 1
  EXPECT_EQ(limiter.grant(), 1);
  for (int i = 0; i < 110; ++i) ASSERT_TRUE(limiter.Acquire(1));
  EXPECT_EQ(clock.NowMs() - kT, 1000);  // 10 from the bucket, 100 more at 100/s
  RateLimiter unlimited(0, clock, stop);
  EXPECT_TRUE(unlimited.unlimited());
  EXPECT_TRUE(unlimited.Acquire(1'000'000));
  EXPECT_EQ(clock.NowMs() - kT, 1000);
  stop.Request();
  EXPECT_FALSE(limiter.Acquire(1));
}

// A governed limiter starts at 1% of its ceiling, climbs while the present is on time, and
// halves when an on-time firing is late: what a debt firing pays per grant follows.
TEST(RateLimiterTest, AGovernedLimiterFollowsTheLatenessOfThePresent) {
  FakeClock clock(kT);
  StopSignal stop;
  CatchUpGovernorOptions g;
  g.min_rate = 100;
  g.yield_at_ms = 500;
  RateLimiter limiter(10'000, clock, stop, g);  // grants of 100
  EXPECT_EQ(limiter.rate(), 100);
  const auto ms_for = [&](int grants) {
    const EpochMs start = clock.NowMs();
    for (int i = 0; i < grants; ++i) EXPECT_TRUE(limiter.Acquire(limiter.grant()));
    return clock.NowMs() - start;
  };
  const auto drain = [&] {  // take until the bucket makes us wait: it then holds nothing
    for (const EpochMs start = clock.NowMs(); clock.NowMs() == start;) limiter.Acquire(limiter.grant());
  };
  drain();
  EXPECT_NEAR(ms_for(10), 10'000, 1);  // 1,000 tokens at 100/s
  clock.Advance(30'000);
  EXPECT_EQ(limiter.OnOnTimeFired(120), 10'000);  // 30 s on time: the ceiling
  drain();
  EXPECT_NEAR(ms_for(100), 1'000, 1);  // 10,000 tokens at 10,000/s
  EXPECT_EQ(limiter.OnOnTimeFired(900), 5'000);
  EXPECT_EQ(limiter.OnOnTimeFired(900), 5'000);  // same second: one halving
  clock.Advance(1'000);
  EXPECT_EQ(limiter.OnOnTimeFired(900), 2'500);
  drain();
  EXPECT_NEAR(ms_for(25), 1'000, 1);  // 2,500 tokens at 2,500/s
  RateLimiter fixed(10'000, clock, stop);
  EXPECT_EQ(fixed.OnOnTimeFired(60'000), 10'000);  // not governed: lateness is ignored
}

}  // namespace
}  // namespace belfry
