// Retries on plain values: placement minutes, retry-row ids, the planner (attempt limit,
// supersession, duplicates, lateness), the command fields, the trigger's attempt and the firer.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/command_parser.h"
#include "core/retry_planner.h"
#include "core/retry_policy.h"
#include "core/shard_layout.h"
#include "core/shard_firer.h"
#include "core/slot_math.h"
#include "core/trigger_encoder.h"
#include "scheduler_sim.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int64_t kTick = 500;

TEST(RetryPlacementTest, FirstLayoutMinuteAtOrAfterNeverFiresEarly) {
  for (int32_t shard : {0, 1, 59, 119}) {
    for (EpochMs t = 1'795'354'600'000; t < 1'795'354'600'000 + 180'000; t += 250) {
      const int64_t m = FirstLayoutMinuteAtOrAfter(ShardLayout{}, t, shard);
      EXPECT_GE(SlotMs(m, shard, kTick), t);
      EXPECT_LT(SlotMs(m - 1, shard, kTick), t);  // and not a minute later than needed
    }
  }
  EXPECT_EQ(FirstLayoutMinuteAtOrAfter(ShardLayout{}, SlotMs(100, 7, kTick), 7), 100);  // exactly on a slot
}

TEST(RetryRowIdTest, RoundTripsAndRejectsOtherIds) {
  const std::string id = RetryRowId("shipment#42", 1'795'354'652'500, 3);
  EXPECT_EQ(id, "shipment#42#retry#1795354652500#3");
  const auto ref = ParseRetryRowId(id);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->job_id, "shipment#42");
  EXPECT_EQ(ref->attempt, 3);
  for (const char* other : {"shipment-42", "#retry#1#1", "a#retry#", "a#retry#1", "a#retry#1#0", "a#retry#x#1",
                            "a#retry#1#1x", "a#retry#1#-1", "a#retry#1#99999999999"}) {
    EXPECT_FALSE(ParseRetryRowId(other).has_value()) << other;
  }
}

ExecutionReport Failed(const std::string& job, EpochMs slot, int32_t attempt, std::optional<EpochMs> finished) {
  ExecutionReport r;
  r.job_id = job;
  r.scheduled_for_ms = slot;
  r.attempt = attempt;
  r.status = ExecutionStatus::kFailed;
  r.finished_at = finished;
  r.source = SourcePosition{0, 1, 0};
  return r;
}

class RetryPlannerTest : public ::testing::Test {
 protected:
  RetryPlannerTest() {
    RetryTarget t;
    t.id = "j";
    t.shard = 7;
    t.key = "j";
    t.max_retries = 3;
    t.backoff = RetryBackoff{60'000, 2.0, 600'000};
    targets_.emplace("j", t);
  }
  RetryPlanning Plan(const std::vector<ExecutionReport>& reports,
                     const std::map<std::string, std::optional<EpochMs>>& success = {}) {
    return PlanRetries(reports, targets_, success, RetryRules{kTick, 15 * 60'000}, now_);
  }
  const EpochMs slot_ = SlotMs(29'000'000, 7, kTick);
  const EpochMs now_ = slot_ + 10'000;
  std::map<std::string, RetryTarget> targets_;
};

TEST_F(RetryPlannerTest, BackoffTimesUpToMaxRetries) {
  const EpochMs failed = slot_ + 5'000;
  const std::vector<int64_t> delays = {60'000, 120'000, 240'000};
  for (int32_t attempt = 0; attempt < 3; ++attempt) {
    const RetryPlanning p = Plan({Failed("j", slot_, attempt, failed)});
    ASSERT_EQ(p.retries.size(), 1u) << attempt;
    EXPECT_EQ(p.retries[0].attempt, attempt + 1);
    EXPECT_EQ(p.retries[0].run_at_ms, failed + delays[attempt]);
    EXPECT_EQ(p.retries[0].run_minute, FirstLayoutMinuteAtOrAfter(ShardLayout{}, failed + delays[attempt], 7));
    EXPECT_EQ(p.retries[0].scheduled_for_ms, slot_);
    EXPECT_EQ(p.retries[0].row_id, RetryRowId("j", slot_, attempt + 1));
  }
  EXPECT_TRUE(Plan({Failed("j", slot_, 3, failed)}).retries.empty());  // the limit
}

TEST_F(RetryPlannerTest, OnlyFailuresOfKnownJobs) {
  ExecutionReport ok = Failed("j", slot_, 0, slot_);
  ok.status = ExecutionStatus::kSucceeded;
  ExecutionReport running = ok;
  running.status = ExecutionStatus::kRunning;
  EXPECT_TRUE(Plan({ok, running, Failed("unknown", slot_, 0, slot_)}).retries.empty());
}

TEST_F(RetryPlannerTest, SupersededByASuccessOfThisSlotOrALaterOne) {
  EXPECT_TRUE(Plan({Failed("j", slot_, 0, slot_)}, {{"j", slot_}}).retries.empty());
  EXPECT_TRUE(Plan({Failed("j", slot_, 0, slot_)}, {{"j", slot_ + 60'000}}).retries.empty());
  EXPECT_EQ(Plan({Failed("j", slot_, 0, slot_)}, {{"j", slot_ - 60'000}}).retries.size(), 1u);
  EXPECT_EQ(Plan({Failed("j", slot_, 0, slot_)}, {{"j", std::nullopt}}).retries.size(), 1u);
}

TEST_F(RetryPlannerTest, DuplicateFailuresGiveOneRetryAtTheEarlierTime) {
  const RetryPlanning p = Plan({Failed("j", slot_, 0, slot_ + 9'000), Failed("j", slot_, 0, slot_ + 2'000)});
  ASSERT_EQ(p.retries.size(), 1u);
  EXPECT_EQ(p.retries[0].run_at_ms, slot_ + 62'000);
}

TEST_F(RetryPlannerTest, FailureTimeFallsBackToTheMessageThenTheClock) {
  ExecutionReport r = Failed("j", slot_, 0, std::nullopt);
  r.source.timestamp_ms = slot_ + 3'000;
  EXPECT_EQ(Plan({r}).retries.at(0).run_at_ms, slot_ + 63'000);
  r.source.timestamp_ms = 0;
  EXPECT_EQ(Plan({r}).retries.at(0).run_at_ms, now_ + 60'000);
}

TEST_F(RetryPlannerTest, TooLateRetriesAreCountedNotScheduled) {
  const RetryPlanning p = Plan({Failed("j", slot_ - 3'600'000, 0, slot_ - 3'600'000)});
  EXPECT_TRUE(p.retries.empty());
  EXPECT_EQ(p.too_late, 1);
  // Exactly at the window's edge it is still scheduled.
  const RetryPlanning edge = Plan({Failed("j", slot_, 0, now_ - 15 * 60'000 - 60'000)});
  EXPECT_EQ(edge.retries.size(), 1u);
}

TEST(RetryFieldsTest, CommandCarriesRetrySettingsWithDefaults) {
  TopicPolicy policy({"t.*"}, {});
  CommandRules rules;
  rules.intervals = {1, 5};
  rules.topic_policy = &policy;
  rules.time_zones = &SystemTimeZones();
  RawCommand raw;
  raw.key = "j";
  raw.source = SourcePosition{0, 1, 1'795'354'600'000};
  raw.value = R"({"id":"j","topic":"t.a","intervalMinutes":5,"maxRetries":4,)"
              R"("retryBackoff":{"initialSeconds":30,"multiplier":1.5,"maxSeconds":900}})";
  StatusOr<Command> c = ParseCommand(raw, rules);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value().spec.max_retries, 4);
  EXPECT_EQ(c.value().spec.retry_backoff, (RetryBackoff{30'000, 1.5, 900'000}));

  raw.value = R"({"id":"j","topic":"t.a","intervalMinutes":5,"maxRetries":2,"retryBackoff":{"initialSeconds":7200}})";
  c = ParseCommand(raw, rules);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value().spec.retry_backoff, (RetryBackoff{7'200'000, 2.0, 7'200'000}));  // cap raised to initial

  raw.value = R"({"id":"j","topic":"t.a","intervalMinutes":5})";
  c = ParseCommand(raw, rules);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().spec.max_retries, 0);
  EXPECT_EQ(c.value().spec.retry_backoff, RetryBackoff{});
}

TEST(RetryTriggerTest, AttemptAppearsOnlyOnRetries) {
  TriggerView t;
  t.job_id = "j";
  t.details_json = "{}";
  t.interval_minutes = 5;
  t.scheduled_for_ms = 1'795'354'652'500;
  std::string plain, retry;
  EncodeTriggerValue(t, &plain);
  t.attempt = 2;
  EncodeTriggerValue(t, &retry);
  EXPECT_EQ(plain, R"({"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":5,"jobDetails":{}})");
  EXPECT_EQ(retry,
            R"({"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":5,"attempt":2,"jobDetails":{}})");
  EXPECT_EQ(AttemptHeader(2), "2");
}

TEST(RetryFiringTest, ARetryRowFiresAsItsJobWithTheAttempt) {
  constexpr int64_t kM = 29'922'577;
  SchedulerConfig cfg;
  FakeClock clock(SlotMs(kM, 0, 500));
  FakeJobStore store;
  FakeShardLedger ledger(120, clock);
  FakeTriggerSink sink;
  TopicPolicy policy({"*"}, {});
  RecordingObserver observer;
  ShardFirer firer(cfg, "node-a", store, ledger, sink, policy, clock, observer);

  JobSpec job = MakeJob("j", 1, 0);
  const EpochMs original_slot = SlotMs(kM - 3, job.shard, 500);
  JobSpec retry = job;
  retry.id = RetryRowId("j", original_slot, 2);
  retry.interval_minutes = 1;
  retry.run_at = SlotMs(kM, job.shard, 500);
  retry.run_minute = kM;
  retry.scheduled_for_ms = original_slot;
  retry.attempt = 2;
  retry.retry_of = "j";
  store.Put(job);
  store.Put(retry);
  ledger.SetFiredThrough(job.shard, kM - 1);
  ASSERT_EQ(firer.FireUpTo(job.shard, kM), ShardFirer::Outcome::kFired);
  const std::vector<SentTrigger> sent = sink.sent();
  ASSERT_EQ(sent.size(), 2u);
  int retries = 0;
  for (const SentTrigger& t : sent) {
    EXPECT_EQ(t.job_id, "j");
    EXPECT_EQ(t.key, "j");
    if (t.scheduled_for_ms == original_slot) {
      ++retries;
      EXPECT_NE(t.value.find(R"("jobId":"j",)"), std::string::npos) << t.value;
      EXPECT_NE(t.value.find(R"("attempt":2,)"), std::string::npos) << t.value;
    } else {
      EXPECT_EQ(t.value.find("attempt"), std::string::npos) << t.value;
    }
  }
  EXPECT_EQ(retries, 1);
}

}  // namespace
}  // namespace belfry
