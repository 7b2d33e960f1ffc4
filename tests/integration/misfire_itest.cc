// Every node down for 3 minutes, then up: the missed shard-minutes are handled by the misfire
// policy. The three policies run at once, each in its own world (database, topics, one node),
// to share the 3-minute wait (issue 3, docs/reliability.md):
//   fire_all  every missed slot arrives with its original scheduledFor, quickly;
//   coalesce  each job fires once for the whole gap, at its latest missed due slot;
//   skip      nothing missed by more than the misfire threshold (30 s) fires.
// Slots after the restart fire on time under every policy, and /metrics counts what was caught
// up or skipped.
//
// The boundary between "missed" and "on time" depends on when the restarted node plans (its
// start-up time): for shard s, minute k_s is the last one missed. The test reads k_s from what
// arrived and checks that it is consistent with the restart time and the threshold.
//
// Why it takes minutes of real time: missed shard-minutes exist only when a real node is down
// across real minute boundaries. Each policy's decisions are unit-tested over the FakeClock
// (core_test: CatchupPlanner).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "belfry_process.h"
#include "core/slot_math.h"
#include "itest_support.h"
#include "plain_producer.h"
#include "trigger_verifier.h"

namespace belfry {
namespace {

constexpr int kOneMinuteJobsPerShard = 10;  // each shard's k_s is read from these
constexpr int kOneMinuteJobs = 120 * kOneMinuteJobsPerShard;
constexpr int kTwoMinuteJobs = 240;
constexpr int64_t kDownMs = 180'000;
constexpr int64_t kThresholdMs = 30'000;  // scheduler.misfire_threshold default
// How long after the restart the node may take to plan its first firings (process start,
// schema check, connections) on a loaded machine.
constexpr int64_t kStartupAllowanceMs = 15'000;
constexpr int64_t kTickMs = 500;

struct PolicyRun {
  std::string policy;
  std::unique_ptr<ItestWorld> world;
  std::unique_ptr<TriggerVerifier> verifier;
  std::unique_ptr<BelfryProcess> node;
  std::vector<ExpectedJob> jobs;
  std::map<int32_t, int64_t> fired_through;  // per shard, read while every node was down
  EpochMs loaded = 0;
  EpochMs restarted = 0;
};

struct PolicyCheck {
  int64_t expected = 0, missing = 0, unexpected = 0, duplicates = 0;
  int64_t boundary_errors = 0;   // shards whose k_s contradicts the restart time or the threshold
  int64_t gap_minutes = 0;       // sum over shards of k_s - F_s: the missed shard-minutes
  int64_t expected_catchup = 0;  // expected slots in the gap (F_s < minute <= k_s)
  int64_t catchup_triggers = 0;  // arrivals for slots in the gap
  EpochMs catchup_done = 0;      // when the last of those was received
  int64_t over_threshold = 0;    // (skip) arrivals later than threshold + 3 s
  LatenessStats after_restart;   // slots from restart + 10 s on
  std::vector<std::string> examples;
};

std::map<std::string, std::string> NodeEnv(const PolicyRun& run) {
  auto env = run.world->Env();
  env["BELFRY_NODE_ID"] = "node-" + run.policy;
  env["BELFRY_SCHEDULER_MISFIRE_POLICY"] = run.policy;
  return env;
}

// Checks one world against its policy for slots in [w0, w_end).
PolicyCheck CheckPolicy(const PolicyRun& run, EpochMs w0, EpochMs w_end) {
  PolicyCheck c;
  const auto arrivals = run.verifier->ArrivalsByJob();
  const EpochMs restart = run.restarted;
  auto note = [&](const std::string& s) {
    if (c.examples.size() < 12) c.examples.push_back(s);
  };
  // k_s, from the first post-gap arrival minute of the shard's one-minute jobs.
  std::map<int32_t, std::set<int64_t>> first_after_gap;
  for (const ExpectedJob& j : run.jobs) {
    if (j.interval_minutes != 1) continue;
    const int64_t f = run.fired_through.at(j.shard);
    auto it = arrivals.find(j.id);
    if (it == arrivals.end()) continue;
    for (const Arrival& a : it->second) {
      const int64_t m = EpochMinuteOf(a.scheduled_for);
      if (m > f) {
        first_after_gap[j.shard].insert(m);
        break;
      }
    }
  }
  std::map<int32_t, int64_t> last_missed;  // k_s
  for (int32_t s = 0; s < 120; ++s) {
    const int64_t f = run.fired_through.at(s);
    int64_t k = f;
    if (run.policy != "fire_all") {
      auto it = first_after_gap.find(s);
      if (it == first_after_gap.end() || it->second.size() != 1) {
        ++c.boundary_errors;
        note("shard " + std::to_string(s) + ": jobs disagree on the first minute after the gap");
        if (it == first_after_gap.end()) continue;
      }
      const int64_t first = *it->second.begin();
      k = run.policy == "coalesce" ? first : first - 1;
      // k_s is missed (slot before the planning time minus the threshold, planning within the
      // start-up allowance), and k_s + 1 is on time.
      const bool k_missed = SlotMs(k, s, kTickMs) < restart + kStartupAllowanceMs - kThresholdMs;
      const bool next_on_time = SlotMs(k + 1, s, kTickMs) >= restart - kThresholdMs;
      if (k - f < 2 || !k_missed || !next_on_time) {
        ++c.boundary_errors;
        note("shard " + std::to_string(s) + ": F=" + std::to_string(f) + " k=" + std::to_string(k) +
             " slot(k)-restart=" + std::to_string(SlotMs(k, s, kTickMs) - restart) + " ms");
      }
    } else {
      // Under fire_all the missed minutes are those whose slot is more than the threshold before
      // the planning time; count the ones surely missed.
      while (SlotMs(k + 1, s, kTickMs) < restart - kThresholdMs) ++k;
    }
    last_missed[s] = k;
    c.gap_minutes += k - f;
  }

  std::vector<int64_t> after_lateness;
  for (const ExpectedJob& j : run.jobs) {
    const int64_t f = run.fired_through.at(j.shard);
    const int64_t k = last_missed.count(j.shard) ? last_missed.at(j.shard) : f;
    std::set<EpochMs> expected;
    for (int64_t m = EpochMinuteOf(w0) - 1; m <= EpochMinuteOf(w_end) + 1; ++m) {
      const EpochMs slot = SlotMs(m, j.shard, kTickMs);
      if (slot < w0 || slot >= w_end || !IsDueInMinute(j.interval_minutes, j.offset_minutes, m)) continue;
      if (m <= f || run.policy == "fire_all" || m > k) expected.insert(slot);
    }
    if (run.policy == "coalesce" && k > f) {
      const int64_t latest = LatestDueMinute(j.interval_minutes, j.offset_minutes, k);
      if (latest > f) expected.insert(SlotMs(latest, j.shard, kTickMs));
    }
    std::map<EpochMs, std::vector<Arrival>> got;
    auto it = arrivals.find(j.id);
    if (it != arrivals.end()) {
      for (const Arrival& a : it->second) {
        if (a.scheduled_for >= w0 && a.scheduled_for < w_end) got[a.scheduled_for].push_back(a);
      }
    }
    c.expected += static_cast<int64_t>(expected.size());
    for (EpochMs slot : expected) {
      if (EpochMinuteOf(slot) > f && EpochMinuteOf(slot) <= k) ++c.expected_catchup;
      auto g = got.find(slot);
      if (g == got.end()) {
        ++c.missing;
        note("missing " + j.id + "@" + std::to_string(slot));
        continue;
      }
      c.duplicates += static_cast<int64_t>(g->second.size()) - 1;
    }
    for (const auto& [slot, copies] : got) {
      if (!expected.count(slot)) {
        c.unexpected += static_cast<int64_t>(copies.size());
        note("unexpected " + j.id + "@" + std::to_string(slot));
      }
      const int64_t m = EpochMinuteOf(slot);
      for (const Arrival& a : copies) {
        if (m > f && m <= k) {
          ++c.catchup_triggers;
          c.catchup_done = std::max(c.catchup_done, a.received_ms);  // when a consumer had it
        }
        if (m > f && a.timestamp_ms - slot > kThresholdMs + 3000) ++c.over_threshold;
      }
      if (slot >= restart + 10'000) after_lateness.push_back(copies.front().timestamp_ms - slot);
    }
  }
  c.after_restart = ComputeLateness(&after_lateness);
  return c;
}

TEST(MisfireTest, EveryNodeDownForThreeMinutesThenEachPolicy) {
  const int64_t test_start = WallMs();
  std::vector<PolicyRun> runs(3);
  runs[0].policy = "fire_all";
  runs[1].policy = "coalesce";
  runs[2].policy = "skip";
  for (PolicyRun& run : runs) {
    run.world = ItestWorld::Create("misfire-" + run.policy);
    ASSERT_NE(run.world, nullptr);
    run.verifier = std::make_unique<TriggerVerifier>(run.world->brokers,
                                                     std::vector<std::string>{run.world->trigger_topic});
  }
  for (PolicyRun& run : runs) {
    run.node = std::make_unique<BelfryProcess>(NodeEnv(run), "/tmp/belfry-" + run.world->run_id + "-1.log");
  }
  for (PolicyRun& run : runs) ASSERT_TRUE(run.node->WaitForLog("belfry serving", 60'000)) << run.node->Log();
  const EpochMs nodes_up = WallMs();

  PlainProducer producer(runs[0].world->brokers);
  for (PolicyRun& run : runs) {
    const std::string& t = run.world->trigger_topic;
    ASSERT_EQ(PublishUpserts(producer, run.world->commands_topic,
                             MakeIdsPerShard(run.world->run_id + "-m1", kOneMinuteJobsPerShard, 120), 1, t),
              0u);
    ASSERT_EQ(PublishUpserts(producer, run.world->commands_topic,
                             MakeIds(run.world->run_id + "-m2", kTwoMinuteJobs), 2, t),
              0u);
  }
  for (PolicyRun& run : runs) {
    ASSERT_TRUE(WaitFor(
        [&] {
          return CountFresh(run.world->db->url(), "SELECT count(*) FROM jobs") ==
                 kOneMinuteJobs + kTwoMinuteJobs;
        },
        120'000));
    run.loaded = WallMs();
    run.jobs = LoadJobs(run.world->db->url(), run.world->run_id + "-m");
    ASSERT_EQ(run.jobs.size(), static_cast<size_t>(kOneMinuteJobs + kTwoMinuteJobs));
  }
  const EpochMs w0 = std::max({runs[0].loaded, runs[1].loaded, runs[2].loaded}) + 1000;
  Note("misfire: 3 worlds loaded " + std::to_string(w0 - test_start) + " ms after the start");

  // Run until every shard has fired at least once (so it has a watermark), then stop everything.
  SleepUntilWallMs(std::max(nodes_up + 65'000, w0 + 20'000));
  for (PolicyRun& run : runs) kill(run.node->pid(), SIGTERM);
  for (PolicyRun& run : runs) {
    int64_t took = 0;
    EXPECT_EQ(run.node->Terminate(15'000, &took), 0) << run.node->Log();
  }
  const EpochMs all_down = WallMs();
  for (PolicyRun& run : runs) {
    std::optional<pqxx::result> r =
        QueryFresh(run.world->db->url(), "SELECT shard, fired_through FROM shard_state");
    ASSERT_TRUE(r.has_value());
    for (const pqxx::row& row : *r) {
      ASSERT_FALSE(row[1].is_null()) << run.policy << ": shard " << row[0].as<int>() << " never fired";
      run.fired_through[row[0].as<int32_t>()] = row[1].as<int64_t>();
    }
    ASSERT_EQ(run.fired_through.size(), 120u);
  }
  Note("misfire: every node stopped; down for " + std::to_string(kDownMs / 1000) + " s");

  SleepUntilWallMs(all_down + kDownMs);
  for (PolicyRun& run : runs) {
    run.restarted = WallMs();
    run.node = std::make_unique<BelfryProcess>(NodeEnv(run), "/tmp/belfry-" + run.world->run_id + "-2.log");
  }
  const EpochMs restarted = WallMs();
  const EpochMs w_end = restarted + 45'000;
  SleepUntilWallMs(w_end + 8000);

  // Poll until each world's check is complete (or a minute passes).
  std::vector<PolicyCheck> checks(runs.size());
  const EpochMs deadline = WallMs() + 60'000;
  while (true) {
    bool done = true;
    for (size_t i = 0; i < runs.size(); ++i) {
      checks[i] = CheckPolicy(runs[i], w0, w_end);
      done = done && checks[i].missing == 0 && checks[i].boundary_errors == 0;
    }
    if (done || WallMs() > deadline) break;
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }

  for (size_t i = 0; i < runs.size(); ++i) {
    const PolicyRun& run = runs[i];
    const PolicyCheck& c = checks[i];
    SCOPED_TRACE(run.policy);
    ASSERT_TRUE(run.node->running()) << run.node->Log();
    const int port = run.node->AdminPort();
    ASSERT_GT(port, 0);
    const std::string metrics = HttpGet(port, "/metrics").value_or("");
    const double caught_up = MetricValue(metrics, "belfry_shard_minutes_caught_up_total").value_or(-1);
    const double skipped =
        MetricValue(metrics, "belfry_shard_minutes_skipped_total{reason=\"policy\"}").value_or(-1);
    const double too_old =
        MetricValue(metrics, "belfry_shard_minutes_skipped_total{reason=\"too_old\"}").value_or(-1);
    const int64_t catchup_ms = c.catchup_done > 0 ? c.catchup_done - run.restarted : 0;
    std::string line =
        "[verify] misfire " + run.policy + ": expected=" + std::to_string(c.expected) +
        " missing=" + std::to_string(c.missing) + " unexpected=" + std::to_string(c.unexpected) +
        " duplicates=" + std::to_string(c.duplicates) +
        " boundary_errors=" + std::to_string(c.boundary_errors) +
        " missed_shard_minutes=" + std::to_string(c.gap_minutes) +
        " catchup_triggers=" + std::to_string(c.catchup_triggers) + "/" + std::to_string(c.expected_catchup) +
        " catchup_done_after_restart_ms=" + std::to_string(catchup_ms) +
        " on_time_after_restart_ms p50/p99/max=" + std::to_string(c.after_restart.p50_ms) + "/" +
        std::to_string(c.after_restart.p99_ms) + "/" + std::to_string(c.after_restart.max_ms) +
        " metrics caught_up=" + std::to_string(static_cast<int64_t>(caught_up)) +
        " skipped{policy}=" + std::to_string(static_cast<int64_t>(skipped)) +
        " skipped{too_old}=" + std::to_string(static_cast<int64_t>(too_old));
    for (const std::string& e : c.examples) line += "\n  " + e;
    Note(line);
    ::testing::Test::RecordProperty(run.policy + "_missing", std::to_string(c.missing));
    ::testing::Test::RecordProperty(run.policy + "_duplicates", std::to_string(c.duplicates));
    ::testing::Test::RecordProperty(run.policy + "_missed_shard_minutes", std::to_string(c.gap_minutes));
    ::testing::Test::RecordProperty(run.policy + "_catchup_done_after_restart_ms",
                                    std::to_string(catchup_ms));
    ::testing::Test::RecordProperty(run.policy + "_on_time_after_restart_max_ms",
                                    std::to_string(c.after_restart.max_ms));

    EXPECT_EQ(c.missing, 0);
    EXPECT_EQ(c.unexpected, 0);
    EXPECT_EQ(c.duplicates, 0) << "a clean stop and restart must not repeat anything";
    EXPECT_EQ(c.boundary_errors, 0);
    EXPECT_GE(c.gap_minutes, 2 * 120) << "the outage should have missed at least 2 minutes of every shard";
    EXPECT_EQ(too_old, 0);
    // The present is not starved by the catch-up.
    EXPECT_LT(c.after_restart.max_ms, 5000);
    EXPECT_EQ(c.catchup_triggers, c.expected_catchup);
    if (run.policy == "fire_all") {
      // Every missed slot of every job, within well under a minute of the restart.
      EXPECT_GT(c.expected_catchup, c.gap_minutes);
      EXPECT_LT(catchup_ms, 60'000);
      EXPECT_GE(caught_up, static_cast<double>(c.gap_minutes));
      EXPECT_EQ(skipped, 0);
    } else if (run.policy == "coalesce") {
      // One trigger per job for the whole gap: 1440 jobs, each with a due minute in it.
      EXPECT_EQ(c.catchup_triggers, kOneMinuteJobs + kTwoMinuteJobs);
      EXPECT_LT(catchup_ms, 60'000);
      EXPECT_EQ(caught_up, static_cast<double>(c.gap_minutes));
      EXPECT_EQ(skipped, 0);
    } else {
      EXPECT_EQ(c.over_threshold, 0) << "skip fired a slot missed by more than the threshold";
      EXPECT_EQ(skipped, static_cast<double>(c.gap_minutes));
      EXPECT_EQ(caught_up, 0);
    }
  }
  Note("misfire test wall time " + std::to_string((WallMs() - test_start) / 1000) + " s");
}

}  // namespace
}  // namespace belfry
