#include "core/catch_up_governor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

namespace belfry {
namespace {

constexpr EpochMs kT = 1'795'354'620'000LL;

CatchUpGovernorOptions Options() {
  CatchUpGovernorOptions o;
  o.max_rate = 100'000;
  o.min_rate = 1'000;
  o.yield_at_ms = 500;
  o.ramp_ms = 30'000;
  o.hold_ms = 1'000;
  return o;
}

TEST(CatchUpGovernorTest, StartsAtTheFloorAndRampsToTheCeilingWhileThePresentIsOnTime) {
  CatchUpGovernor g(Options(), kT);
  EXPECT_EQ(g.rate(), 1'000);
  // Two on-time firings a second, as the 120 shards at 500 ms report them.
  EXPECT_EQ(g.OnOnTimeFired(80, kT + 500), 1'000 + 100'000 * 500 / 30'000);
  EpochMs t = kT + 500;
  while (t < kT + 29'000) g.OnOnTimeFired(80, t += 500);
  EXPECT_LT(g.rate(), 100'000);
  EXPECT_GT(g.rate(), 95'000);
  g.OnOnTimeFired(80, t += 500);
  g.OnOnTimeFired(80, t += 500);
  EXPECT_EQ(g.rate(), 100'000);
  g.OnOnTimeFired(80, t + 3'600'000);  // an hour later: still the ceiling, no overflow
  EXPECT_EQ(g.rate(), 100'000);
  EXPECT_EQ(g.yields(), 0);
}

TEST(CatchUpGovernorTest, ALateFiringHalvesTheRateOncePerHoldDownToTheFloor) {
  CatchUpGovernor g(Options(), kT);
  g.OnOnTimeFired(0, kT + 30'000);
  ASSERT_EQ(g.rate(), 100'000);
  EpochMs t = kT + 30'000;
  EXPECT_EQ(g.OnOnTimeFired(501, t += 1), 50'000);
  // The other firings of the same congested second are late too: no second halving.
  EXPECT_EQ(g.OnOnTimeFired(2'000, t += 500), 50'000);
  EXPECT_EQ(g.OnOnTimeFired(2'000, t += 500), 25'000);
  for (int i = 0; i < 20; ++i) g.OnOnTimeFired(5'000, t += 1'000);
  EXPECT_EQ(g.rate(), 1'000);  // the floor: the catch-up never stops
  EXPECT_EQ(g.yields(), 22);
  // Exactly the budget is on time.
  EXPECT_GT(g.OnOnTimeFired(500, t += 1'000), 1'000);
}

TEST(CatchUpGovernorTest, SettlesWhereThePresentStaysWithinItsBudget) {
  // A machine whose on-time firings turn late once the catch-up goes above 40,000/s: the rate
  // saw-tooths below that (AIMD), and spends most of the time between half of it and all of it.
  CatchUpGovernor g(Options(), kT);
  EpochMs t = kT;
  int64_t late = 0;
  int64_t reports = 0;
  int64_t above_half = 0;
  for (int i = 0; i < 2 * 600; ++i) {  // ten minutes of on-time firings
    const int64_t lateness = g.rate() > 40'000 ? 900 : 150;
    late += lateness > 500;
    ++reports;
    g.OnOnTimeFired(lateness, t += 500);
    if (i >= 120) above_half += g.rate() >= 20'000;
  }
  EXPECT_LE(g.rate(), 45'000);
  EXPECT_LT(late * 10, reports) << "more than 10% of the on-time firings were late";
  EXPECT_GT(above_half * 10, (1200 - 120) * 8) << "the catch-up sat far below what the machine could take";
}

TEST(CatchUpGovernorTest, OptionsAreClampedAndTimeNeverRunsBackwards) {
  CatchUpGovernorOptions o = Options();
  o.min_rate = 0;
  o.max_rate = 10;
  CatchUpGovernor g(o, kT);
  EXPECT_EQ(g.rate(), 1);
  g.OnOnTimeFired(0, kT + 60'000);
  EXPECT_EQ(g.rate(), 10);
  EXPECT_EQ(g.OnOnTimeFired(0, kT), 10);  // earlier than the last report: counts as no time
  o.min_rate = 50;  // above the ceiling: the ceiling
  EXPECT_EQ(CatchUpGovernor(o, kT).rate(), 10);
}

}  // namespace
}  // namespace belfry
