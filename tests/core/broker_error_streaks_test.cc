#include "core/broker_error_streaks.h"

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"

namespace belfry {
namespace {

constexpr EpochMs kT0 = 1'800'000'000'000;

TEST(BrokerErrorStreaksTest, ATopicFailingPastTheBoundWhileOthersDeliverIsUnavailable) {
  FakeClock clock(kT0);
  BrokerErrorStreaks streaks(120'000, 60'000);
  EXPECT_FALSE(streaks.OnBrokerError("t.dark", clock.NowMs()));
  for (int i = 1; i <= 3; ++i) {  // errors every 35 s (a 30 s message timeout, then the back-off)
    clock.Advance(35'000);
    streaks.OnDelivered(clock.NowMs());
    EXPECT_FALSE(streaks.OnBrokerError("t.dark", clock.NowMs())) << i;
  }
  clock.Advance(15'000);  // 120 s after the first error
  EXPECT_TRUE(streaks.OnBrokerError("t.dark", clock.NowMs()));
  EXPECT_FALSE(streaks.OnBrokerError("t.other", clock.NowMs())) << "a streak is per topic";
}

TEST(BrokerErrorStreaksTest, WithoutDeliveriesItIsTheBrokerAndNeverTheTopic) {
  FakeClock clock(kT0);
  BrokerErrorStreaks streaks(120'000, 60'000);
  streaks.OnDelivered(clock.NowMs());  // before the streak: does not count
  for (int i = 0; i <= 10; ++i) {
    EXPECT_FALSE(streaks.OnBrokerError("t.dark", clock.NowMs())) << i;
    clock.Advance(30'000);
  }
}

TEST(BrokerErrorStreaksTest, AGapStartsANewStreak) {
  FakeClock clock(kT0);
  BrokerErrorStreaks streaks(120'000, 60'000);
  streaks.OnBrokerError("t.flaky", clock.NowMs());
  clock.Advance(61'000);  // healthy for over a minute
  streaks.OnDelivered(clock.NowMs());
  EXPECT_FALSE(streaks.OnBrokerError("t.flaky", clock.NowMs()));
  clock.Advance(59'000);
  streaks.OnDelivered(clock.NowMs());
  EXPECT_FALSE(streaks.OnBrokerError("t.flaky", clock.NowMs())) << "120 s since the first error, 59 s since the new streak";
  clock.Advance(61'000);
  EXPECT_FALSE(streaks.OnBrokerError("t.flaky", clock.NowMs())) << "a gap again";
}

}  // namespace
}  // namespace belfry
