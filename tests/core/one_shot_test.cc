// One-shot jobs and priority, on plain values: placement, parsing, and firing through fakes.
#include <gtest/gtest.h>

#include <string>

#include "core/command_parser.h"
#include "core/iso_time.h"
#include "core/one_shot_placement.h"
#include "core/shard_firer.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "core/topic_policy.h"
#include "scheduler_sim.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int64_t kM = 29922577;  // an epoch minute
constexpr int64_t kTick = 500;
const OneShotRules kRules{kTick, 15 * 60'000, true};

// ---- PlaceOneShot -----------------------------------------------------------------------------

TEST(PlaceOneShotTest, FutureRunAtFiresAtItsMinuteAndShardSecond) {
  // runAt 13 s into minute kM+5; shard 40 fires at second 20: same minute, even though that
  // second is after runAt's (the slot is the minute of runAt, placed at the shard's second).
  const EpochMs run_at = kM * 60'000 + 5 * 60'000 + 13'000;
  const OneShotPlacement p = PlaceOneShot(run_at, 40, kM * 60'000, kRules);
  EXPECT_TRUE(p.fires);
  EXPECT_EQ(p.run_minute, kM + 5);
  EXPECT_EQ(p.scheduled_for_ms, SlotMs(kM + 5, 40, kTick));
  EXPECT_EQ(p.late_limit_minute, kM + 5 + 15);
}

TEST(PlaceOneShotTest, ShardSecondBeforeRunAtSecondStillUsesRunAtsMinute) {
  const EpochMs run_at = kM * 60'000 + 50'000;
  const OneShotPlacement p = PlaceOneShot(run_at, 2, kM * 60'000 - 60'000, kRules);
  EXPECT_EQ(p.run_minute, kM);
  EXPECT_EQ(p.scheduled_for_ms, SlotMs(kM, 2, kTick));
}

TEST(PlaceOneShotTest, PastRunAtWithinWindowFiresAtNextSlotAfterTheMessage) {
  const EpochMs run_at = kM * 60'000;                     // slot for shard 10 is kM:05
  const EpochMs msg = kM * 60'000 + 3 * 60'000 + 30'000;  // kM+3 at :30
  const OneShotPlacement p = PlaceOneShot(run_at, 10, msg, kRules);
  EXPECT_TRUE(p.fires);
  EXPECT_EQ(p.scheduled_for_ms, SlotMs(kM, 10, kTick));  // scheduledFor keeps the original slot
  EXPECT_EQ(p.run_minute, kM + 4);                       // :05 of kM+3 has passed
  EXPECT_GE(SlotMs(p.run_minute, 10, kTick), msg + kOneShotLateMarginMs);
  EXPECT_LT(SlotMs(p.run_minute, 10, kTick), msg + kOneShotLateMarginMs + 60'000);
  EXPECT_EQ(p.late_limit_minute, kM + 15);
}

TEST(PlaceOneShotTest, LateMarginPushesToTheFollowingMinute) {
  // Shard 10's slot is 0.5 s after the message: closer than the margin, so the next minute.
  const EpochMs msg = SlotMs(kM + 1, 10, kTick) - 500;
  const OneShotPlacement p = PlaceOneShot(kM * 60'000, 10, msg, kRules);
  EXPECT_EQ(p.run_minute, kM + 2);
}

TEST(PlaceOneShotTest, SlotExactlyAtMessageTimeHasPassed) {
  const EpochMs slot = SlotMs(kM, 7, kTick);
  const OneShotPlacement p = PlaceOneShot(kM * 60'000, 7, slot, kRules);
  EXPECT_TRUE(p.fires);
  EXPECT_EQ(p.run_minute, kM + 1);
  const OneShotPlacement q = PlaceOneShot(kM * 60'000, 7, slot - 1, kRules);
  EXPECT_EQ(q.run_minute, kM);
}

TEST(PlaceOneShotTest, WindowEdgeInclusive) {
  const EpochMs slot = SlotMs(kM, 0, kTick);
  EXPECT_TRUE(PlaceOneShot(kM * 60'000, 0, slot + 15 * 60'000, kRules).fires);
  const OneShotPlacement beyond = PlaceOneShot(kM * 60'000, 0, slot + 15 * 60'000 + 1, kRules);
  EXPECT_FALSE(beyond.fires);
  EXPECT_EQ(beyond.run_minute, kM);  // stored at its own past minute: never queried again
  EXPECT_EQ(beyond.late_limit_minute, -1);
}

TEST(PlaceOneShotTest, SkipPolicyNeverFiresLate) {
  OneShotRules skip = kRules;
  skip.fire_late = false;
  const OneShotPlacement past = PlaceOneShot(kM * 60'000, 3, kM * 60'000 + 10'000, skip);
  EXPECT_FALSE(past.fires);
  EXPECT_EQ(past.late_limit_minute, -1);
  const OneShotPlacement future = PlaceOneShot((kM + 2) * 60'000, 3, kM * 60'000, skip);
  EXPECT_TRUE(future.fires);
  EXPECT_EQ(future.run_minute, kM + 2);
  EXPECT_EQ(future.late_limit_minute, -1);  // a lagging consumer does not move it either
}

TEST(PlaceOneShotTest, DeterministicForReplay) {
  for (int32_t shard = 0; shard < 120; shard += 7) {
    for (EpochMs msg = kM * 60'000 - 90'000; msg < kM * 60'000 + 20 * 60'000; msg += 7'919) {
      const OneShotPlacement a = PlaceOneShot(kM * 60'000 + 1234, shard, msg, kRules);
      const OneShotPlacement b = PlaceOneShot(kM * 60'000 + 1234, shard, msg, kRules);
      EXPECT_EQ(a.run_minute, b.run_minute);
      EXPECT_EQ(a.scheduled_for_ms, b.scheduled_for_ms);
      // Whenever it fires, it fires no earlier than its slot and no earlier than the message.
      if (a.fires) {
        EXPECT_GE(SlotMs(a.run_minute, shard, kTick), a.scheduled_for_ms);
        EXPECT_GT(SlotMs(a.run_minute, shard, kTick), std::min(msg, a.scheduled_for_ms - 1));
      }
    }
  }
}

// ---- Parsing ------------------------------------------------------------------------------------

class OneShotParseTest : public ::testing::Test {
 protected:
  OneShotParseTest() : policy_({"*"}, {"belfry.commands"}) {
    rules_.intervals = {1, 5, 15, 60};
    rules_.topic_policy = &policy_;
    rules_.time_zones = &SystemTimeZones();
  }
  StatusOr<Command> Parse(const std::string& id, const std::string& value, EpochMs ts) const {
    RawCommand raw;
    raw.key = id;
    raw.value = value;
    raw.source = SourcePosition{0, 1, ts};
    return ParseCommand(raw, rules_);
  }
  TopicPolicy policy_;
  CommandRules rules_;
};

TEST_F(OneShotParseTest, OnceWithRunAt) {
  const EpochMs run_at = *ParseIsoTime("2026-11-22T13:37:10Z");
  auto c = Parse(
      "o1",
      R"({"id":"o1","executionInterval":"ONCE","runAt":"2026-11-22T13:37:10Z","topic":"t","priority":5})",
      run_at - 3'600'000);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const JobSpec& s = c->spec;
  EXPECT_TRUE(s.one_shot());
  EXPECT_EQ(s.interval_minutes, 0);
  EXPECT_EQ(*s.run_at, run_at);
  EXPECT_EQ(s.run_minute, EpochMinuteOf(run_at));
  EXPECT_EQ(s.scheduled_for_ms, SlotMs(EpochMinuteOf(run_at), ShardForId("o1", 120), 500));
  EXPECT_EQ(s.priority, 5);
}

TEST_F(OneShotParseTest, RunAtAloneAndOnceWithStartDateTime) {
  auto a = Parse("o2", R"({"id":"o2","runAt":"2026-11-22T13:00:00Z","topic":"t"})", 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->spec.one_shot());
  auto b = Parse(
      "o3", R"({"id":"o3","executionInterval":"ONCE","startDateTime":"2026-11-22T13:00:00Z","topic":"t"})",
      0);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b->spec.run_at, *ParseIsoTime("2026-11-22T13:00:00Z"));
  EXPECT_FALSE(b->spec.start_at.has_value());
}

TEST_F(OneShotParseTest, IntervalJobsAreUnchanged) {
  auto c = Parse("i1", R"({"id":"i1","intervalMinutes":15,"topic":"t"})", 0);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->spec.one_shot());
  EXPECT_EQ(c->spec.interval_minutes, 15);
}

TEST_F(OneShotParseTest, Rejections) {
  const struct {
    const char* value;
    const char* reason;
  } cases[] = {
      {R"({"id":"x","executionInterval":"ONCE","topic":"t"})", "missing_field"},
      {R"({"id":"x","runAt":"2026-11-22T13:00:00Z","intervalMinutes":5,"topic":"t"})", "invalid_one_shot"},
      {R"({"id":"x","runAt":"2026-11-22T13:00:00Z","executionInterval":"EVERY_MINUTE","topic":"t"})",
       "invalid_one_shot"},
      {R"({"id":"x","executionInterval":"ONCE","intervalMinutes":5,"runAt":"2026-11-22T13:00:00Z","topic":"t"})",
       "conflicting_interval"},
      {R"({"id":"x","runAt":"2026-11-22T13:00:00Z","offsetMinutes":1,"topic":"t"})", "invalid_one_shot"},
      {R"({"id":"x","runAt":"2026-11-22T13:00:00Z","endDateTime":"2026-11-23T13:00:00Z","topic":"t"})",
       "invalid_one_shot"},
      {R"({"id":"x","runAt":"2026-11-22T13:00:00Z","startDateTime":"2026-11-22T13:00:00Z","topic":"t"})",
       "invalid_one_shot"},
      {R"({"id":"x","runAt":"yesterday","topic":"t"})", "invalid_date"},
      {R"({"id":"x","runAt":42,"topic":"t"})", "wrong_type"},
      {R"({"id":"x","runAt":"2026-11-22T13:00:00Z"})", "missing_field"},
      {R"({"id":"x","executionInterval":"once","runAt":"2026-11-22T13:00:00Z","topic":"t"})",
       "invalid_one_shot"},
  };
  for (const auto& c : cases) {
    auto r = Parse("x", c.value, 0);
    ASSERT_FALSE(r.ok()) << c.value;
    EXPECT_EQ(r.status().reason(), c.reason) << c.value << " -> " << r.status().ToString();
  }
}

// ---- Firing -------------------------------------------------------------------------------------

class OneShotFiringTest : public FiringFakes {
 protected:
  OneShotFiringTest()
      : FiringFakes(SlotMs(kM, 0, kTick)),
        firer_(cfg_, "node-a", store_, ledger_, sink_, policy_, clock_, observer_) {}

  JobSpec OneShot(const std::string& id, int64_t run_minute, EpochMs scheduled_for) {
    JobSpec s;
    s.id = id;
    s.shard = ShardForId(id, 120);
    s.topic = "once";
    s.details_json = "{}";
    s.run_at = scheduled_for;
    s.run_minute = run_minute;
    s.scheduled_for_ms = scheduled_for;
    return s;
  }

  ShardFirer firer_;
};

TEST_F(OneShotFiringTest, FiresOnceAtItsMinuteWithItsScheduledFor) {
  JobSpec s = OneShot("o", kM + 1, SlotMs(kM - 3, ShardForId("o", 120), kTick));
  store_.Put(s);
  ledger_.SetFiredThrough(s.shard, kM - 1);
  ASSERT_EQ(firer_.FireUpTo(s.shard, kM), ShardFirer::Outcome::kFired);
  EXPECT_TRUE(sink_.sent().empty());
  ASSERT_EQ(firer_.FireUpTo(s.shard, kM + 1), ShardFirer::Outcome::kFired);
  ASSERT_EQ(sink_.sent().size(), 1u);
  EXPECT_EQ(sink_.sent()[0].scheduled_for_ms, s.scheduled_for_ms);
  EXPECT_EQ(sink_.sent()[0].interval_minutes, 0);
  for (int64_t m = kM + 2; m < kM + 5; ++m) firer_.FireUpTo(s.shard, m);
  EXPECT_EQ(sink_.sent().size(), 1u);
}

TEST_F(OneShotFiringTest, PriorityOrderWithinAShardMinute) {
  // Find ids on one shard.
  std::vector<std::string> ids;
  for (int i = 0; ids.size() < 4; ++i) {
    std::string id = "p";
    id += std::to_string(i);
    if (ShardForId(id, 120) == 5) ids.push_back(id);
  }
  const int priorities[] = {0, 7, -2, 3};
  for (size_t i = 0; i < ids.size(); ++i) {
    JobSpec s = MakeJob(ids[i], 1, 0);
    s.priority = priorities[i];
    store_.Put(s);
  }
  ledger_.SetFiredThrough(5, kM - 1);
  ASSERT_EQ(firer_.FireUpTo(5, kM), ShardFirer::Outcome::kFired);
  ASSERT_EQ(sink_.sent().size(), 4u);
  EXPECT_EQ(sink_.sent()[0].job_id, ids[1]);
  EXPECT_EQ(sink_.sent()[1].job_id, ids[3]);
  EXPECT_EQ(sink_.sent()[2].job_id, ids[0]);
  EXPECT_EQ(sink_.sent()[3].job_id, ids[2]);
}

TEST(NextJobTriggerTimesTest, OneShot) {
  JobSpec s;
  s.shard = 4;
  s.run_at = kM * 60'000;
  s.run_minute = kM + 2;
  s.scheduled_for_ms = SlotMs(kM, 4, kTick);
  const auto next = NextJobTriggerTimes(SystemTimeZones(), s, kTick, kM * 60'000, 3);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], SlotMs(kM + 2, 4, kTick));
  EXPECT_TRUE(NextJobTriggerTimes(SystemTimeZones(), s, kTick, SlotMs(kM + 2, 4, kTick), 3).empty());
}

}  // namespace
}  // namespace belfry
