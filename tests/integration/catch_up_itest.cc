// Issue 17 on the real servers, at a small scale: on-time shard-minutes go ahead of the catch-up.
//
// A node that fires nothing (scheduler.enabled false) loads the jobs and stops; every shard's
// watermark is then set four minutes back, as `belfry-loadtest burst` rewinds it, so 2-3
// minutes of every shard are missed. A node starts with a catch-up rate so low that the debt
// takes about a minute to drain. While it drains, the on-time triggers of the minutes after the
// restart must arrive on time (lateness well under a second), and in the end every slot from the
// rewound watermark on must have arrived exactly once, with the debt empty.
//
// Why it takes minutes of real time: 2-3 real minutes of debt drained at a low rate while the
// on-time minutes fire beside it. The ordering and pacing rules are unit-tested over the FakeClock
// (core_test: CatchUpGovernor, catch-up ordering).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "belfry_process.h"
#include "core/slot_math.h"
#include "itest_support.h"
#include "plain_producer.h"
#include "trigger_verifier.h"

namespace belfry {
namespace {

constexpr int kJobs = 600;                // 5 per shard, every minute: 10 triggers/s on time
constexpr int64_t kCatchUpRate = 20;      // triggers/s: ~1,500 owed take over a minute
constexpr int64_t kThresholdMs = 30'000;  // scheduler.misfire_threshold default
constexpr int64_t kTickMs = 500;

TEST(CatchUpTest, OnTimeTriggersStayOnTimeWhileAPacedCatchUpDrains) {
  const int64_t test_start = WallMs();
  std::unique_ptr<ItestWorld> world = ItestWorld::Create("catchup");
  ASSERT_NE(world, nullptr);
  TriggerVerifier verifier(world->brokers, {world->trigger_topic});

  // Load the jobs through a node that fires nothing.
  auto loader_env = world->Env();
  loader_env["BELFRY_NODE_ID"] = "loader";
  loader_env["BELFRY_SCHEDULER_ENABLED"] = "false";
  auto loader = std::make_unique<BelfryProcess>(loader_env, "/tmp/belfry-" + world->run_id + "-loader.log");
  ASSERT_TRUE(loader->WaitForLog("belfry serving", 60'000)) << loader->Log();
  PlainProducer producer(world->brokers);
  ASSERT_EQ(PublishUpserts(producer, world->commands_topic, MakeIds(world->run_id + "-j", kJobs), 1,
                           world->trigger_topic),
            0u);
  ASSERT_TRUE(
      WaitFor([&] { return CountFresh(world->db->url(), "SELECT count(*) FROM jobs") == kJobs; }, 120'000));
  const std::vector<ExpectedJob> jobs = LoadJobs(world->db->url(), world->run_id + "-j");
  ASSERT_EQ(jobs.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(loader->Terminate(15'000), 0) << loader->Log();

  // Rewind: minutes F+1 .. now are unfired; those more than the threshold old are missed.
  const int64_t rewound = EpochMinuteOf(WallMs()) - 4;
  ASSERT_TRUE(
      QueryFresh(world->db->url(), "UPDATE shard_state SET fired_through = " + std::to_string(rewound))
          .has_value());

  auto env = world->Env();
  env["BELFRY_NODE_ID"] = "node-catchup";
  env["BELFRY_SCHEDULER_CATCH_UP_RATE"] = std::to_string(kCatchUpRate);
  // A fixed rate, so the drain takes a known time: the governor that steers the rate by the
  // present's lateness (the default) is tested on the FakeClock (catch_up_governor_test) and
  // measured by `belfry-loadtest catchup`.
  env["BELFRY_SCHEDULER_CATCH_UP_YIELD_AT"] = "0ms";
  const EpochMs restarted = WallMs();
  auto node = std::make_unique<BelfryProcess>(env, "/tmp/belfry-" + world->run_id + "-node.log");
  ASSERT_TRUE(node->WaitForLog("belfry serving", 60'000)) << node->Log();
  const int port = node->AdminPort();
  ASSERT_GT(port, 0);

  // The debt appears, then drains at the catch-up rate; wait until it is gone. Its peak is the
  // missed shard-minutes (the first firings record them within a few seconds).
  const std::string owed_sql =
      "SELECT coalesce(sum(upper(r) - lower(r)), 0) FROM shard_state, unnest(debt) AS r";
  int64_t owed_peak = 0;
  EXPECT_TRUE(WaitFor(
      [&] {
        const int64_t owed = CountFresh(world->db->url(), owed_sql);
        owed_peak = std::max(owed_peak, owed);
        return owed_peak > 0 && owed == 0;
      },
      240'000))
      << "the debt never drained";
  const EpochMs drained = WallMs();
  const EpochMs w_end = drained - 2000;  // every slot before it has had its firing
  SleepUntilWallMs(drained + 5000);      // let the consumer catch up

  const EpochMs from = SlotMs(rewound + 1, 0, kTickMs);
  const VerifyReport all = verifier.WaitComplete(jobs, from, w_end, 30'000);
  Note(all.Summary("catch-up, every slot from the rewound watermark on"));
  all.Record("catchup_all");

  // On-time triggers: slots from restart + 10 s (the node is up and has planned) until the debt
  // drained. Catch-up triggers: slots missed by more than the threshold at the restart.
  std::vector<int64_t> on_time_lateness;
  EpochMs last_catch_up_received = 0;
  int64_t catch_up_triggers = 0;
  for (const auto& [id, arrivals] : verifier.ArrivalsByJob()) {
    for (const Arrival& a : arrivals) {
      if (a.scheduled_for < from) continue;
      if (a.scheduled_for < restarted - kThresholdMs) {
        ++catch_up_triggers;
        last_catch_up_received = std::max(last_catch_up_received, a.received_ms);
      } else if (a.scheduled_for >= restarted + 10'000 && a.scheduled_for < w_end) {
        on_time_lateness.push_back(a.timestamp_ms - a.scheduled_for);
      }
    }
  }
  int64_t on_time_before_catch_up_done = 0;
  for (const auto& [id, arrivals] : verifier.ArrivalsByJob()) {
    for (const Arrival& a : arrivals) {
      if (a.scheduled_for >= restarted + 10'000 && a.received_ms < last_catch_up_received) {
        ++on_time_before_catch_up_done;
      }
    }
  }
  const LatenessStats on_time = ComputeLateness(&on_time_lateness);
  const std::string metrics = HttpGet(port, "/metrics").value_or("");
  const double debt_gauge = MetricValue(metrics, "belfry_catch_up_debt_minutes").value_or(-1);
  const double caught_up = MetricValue(metrics, "belfry_shard_minutes_caught_up_total").value_or(-1);
  const double rate_gauge = MetricValue(metrics, "belfry_catch_up_rate").value_or(-1);
  Note("[verify] catch-up: owed_peak=" + std::to_string(owed_peak) + " shard-minutes, drained " +
       std::to_string((drained - restarted) / 1000) + " s after the restart; catch-up triggers " +
       std::to_string(catch_up_triggers) + ", last received " +
       std::to_string((last_catch_up_received - restarted) / 1000) +
       " s after the restart; on-time triggers " + std::to_string(on_time_lateness.size()) + " (" +
       std::to_string(on_time_before_catch_up_done) +
       " received before the catch-up ended), lateness p50/p99/max " + std::to_string(on_time.p50_ms) + "/" +
       std::to_string(on_time.p99_ms) + "/" + std::to_string(on_time.max_ms) +
       " ms; metrics debt=" + std::to_string(static_cast<int64_t>(debt_gauge)) +
       " caught_up=" + std::to_string(static_cast<int64_t>(caught_up)));
  RecordProperty("on_time_p99_ms", std::to_string(on_time.p99_ms));
  RecordProperty("on_time_max_ms", std::to_string(on_time.max_ms));
  RecordProperty("catch_up_seconds", std::to_string((drained - restarted) / 1000));

  EXPECT_EQ(all.missing, 0);
  EXPECT_EQ(all.duplicates, 0) << "the catch-up doubled something";
  EXPECT_EQ(all.unexpected, 0);
  // At least two whole minutes of every shard were missed and caught up; the debt peaked lower
  // as debt firings began before the last shards recorded theirs.
  EXPECT_GE(caught_up, 2 * 120);
  EXPECT_GE(owed_peak, 120);
  // The catch-up was paced: it lasted well past the restart, and the present went ahead of it.
  EXPECT_GT(last_catch_up_received - restarted, 40'000);
  EXPECT_GT(on_time_before_catch_up_done, kJobs / 2);
  ASSERT_GT(on_time_lateness.size(), static_cast<size_t>(kJobs / 2));
  EXPECT_LT(on_time.p99_ms, 1000);
  EXPECT_LT(on_time.max_ms, 2000);
  EXPECT_EQ(debt_gauge, 0);
  EXPECT_EQ(rate_gauge, static_cast<double>(kCatchUpRate));
  EXPECT_GE(caught_up, static_cast<double>(owed_peak));
  EXPECT_EQ(node->Terminate(15'000), 0) << node->Log();
  Note("catch-up test wall time " + std::to_string((WallMs() - test_start) / 1000) + " s");
}

}  // namespace
}  // namespace belfry
