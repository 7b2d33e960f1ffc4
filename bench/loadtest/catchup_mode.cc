// catchup: on-time triggers during a catch-up (issue 17, docs/catch-up.md). With belfry stopped,
// every shard is rewound K minutes as `burst` does; belfry is started (with --belfry-bin, or by
// the operator) and owes those minutes as catch-up debt, which it drains at
// scheduler.catch_up_rate while it fires the present. One consumer reads every trigger topic
// throughout and reports, in one run:
//   (a) lateness (receive time - scheduledFor) of the on-time triggers: slots from belfry's start
//       (plus --grace) until the debt was empty (or --window ended first);
//   (b) how long the catch-up took: belfry's start until no shard owed debt;
//   (c) missing, duplicate and unexpected triggers over the whole set: every due slot from the
//       first rewound minute to the end of the window, missed and on-time alike.
//
// REQUIRES: misfire policy fire_all (the default) and max_catchup > K + 1 minutes.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <thread>
#include <vector>

#include "core/iso_time.h"
#include "loadtest/belfry_process.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/latency_histogram.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/metrics_scrape.h"
#include "loadtest/pg_connection.h"
#include "loadtest/progress_meter.h"
#include "loadtest/shard_rewind.h"
#include "loadtest/trigger_expectations.h"
#include "loadtest/trigger_tally.h"

namespace belfry::loadtest {
namespace {

struct CatchUpOptions {
  std::string belfry_bin;
  std::string belfry_args = "serve";
  std::string belfry_log = "belfry-catchup.log";
  std::string catch_up_rate;  // empty: belfry's own configuration
  std::string catch_up_yield_at;  // empty: belfry's own configuration
  std::string admin;              // for belfry_catch_up_rate; default $BELFRY_ADMIN_LISTEN, else none
  int32_t minutes = 14;
  std::string window = "10m";
  std::string grace = "5s";
  std::string timeout = "40m";
  std::string claim_wait = "15s";
  std::string topics_prefix = "lt.triggers.";
};

int RunCatchUp(const CommonOptions& common, const CatchUpOptions& options) {
  if (options.minutes < 1 || options.minutes > 14) throw std::invalid_argument("--minutes must be in 1..14");
  const int64_t window_ms = ParseDurationMs(options.window);
  const int64_t grace_ms = ParseDurationMs(options.grace);
  const int64_t timeout_ms = ParseDurationMs(options.timeout);

  PgConnection conn(common.database_url, "");
  TriggerExpectations expectations;
  fmt::print(stderr, "catchup: reading jobs with topic prefix {} ...\n", options.topics_prefix);
  expectations.Load(conn, options.topics_prefix);
  WaitForNoLiveLeases(conn, ParseDurationMs(options.claim_wait));
  LiveTopicReader reader(LiveTopicReaderOptions{common.brokers,
                                                "^" + RegexEscape(options.topics_prefix) + ".*",
                                                kTriggerHeaders, "belfry-loadtest-catchup"});

  const Rewind rewind = RewindShards(conn, options.minutes);
  const EpochMs start_ms = WallClockMs();
  const EpochMs window_last = start_ms + window_ms;
  expectations.SetWindow(rewind.first_slot_ms, window_last);
  fmt::print(stderr, "catchup: rewound {} shards to fired_through={}; {} triggers due in {} .. {}\n",
             rewind.shards, rewind.fired_through, expectations.expected(),
             FormatIsoTime(rewind.first_slot_ms), FormatIsoTime(window_last));

  std::unique_ptr<BelfryProcess> belfry;
  if (!options.belfry_bin.empty()) {
    std::vector<std::pair<std::string, std::string>> env = {
        {"BELFRY_DATABASE_URL", common.database_url},
        {"BELFRY_KAFKA_BROKERS", common.brokers},
        {"BELFRY_KAFKA_COMMANDS_TOPIC", common.commands_topic},
        {"BELFRY_KAFKA_RESULTS_TOPIC", common.results_topic}};
    if (!options.catch_up_rate.empty())
      env.emplace_back("BELFRY_SCHEDULER_CATCH_UP_RATE", options.catch_up_rate);
    if (!options.catch_up_yield_at.empty())
      env.emplace_back("BELFRY_SCHEDULER_CATCH_UP_YIELD_AT", options.catch_up_yield_at);
    belfry = std::make_unique<BelfryProcess>(options.belfry_bin, SplitArgs(options.belfry_args), env,
                                             options.belfry_log);
    fmt::print(stderr, "catchup: started {} (pid {}, log {})\n", options.belfry_bin, belfry->pid(),
               options.belfry_log);
  } else {
    fmt::print(stderr, "catchup: start belfry now\n");
  }

  TriggerTally* tally_ptr = nullptr;
  ProgressMeter meter("catchup", [&tally_ptr] { return tally_ptr->ProgressText(); });
  ProgressCounter* arrived = meter.AddCounter("expected seen", expectations.expected());
  TriggerTally tally(&expectations, arrived);
  tally_ptr = &tally;
  // First arrivals, split by slot: before belfry's start (the catch-up) or after it (on time).
  struct Arrival {
    EpochMs scheduled_for;
    EpochMs received;
  };
  std::vector<Arrival> on_time;
  LatencyHistogram catch_up_lateness;
  EpochMs last_catch_up_ms = 0;
  const auto add = [&](const LiveRecord& r) {
    if (tally.Add(r) != TriggerExpectations::Verdict::kExpected) return;
    EpochMs sf = 0;
    std::from_chars(r.headers[1].data(), r.headers[1].data() + r.headers[1].size(), sf);
    if (sf < start_ms) {
      catch_up_lateness.Record(r.received_ms - sf);
      last_catch_up_ms = std::max(last_catch_up_ms, r.received_ms);
    } else if (sf >= start_ms + grace_ms) {
      on_time.push_back({sf, r.received_ms});
    }
  };

  meter.Start();
  bool belfry_died = false;
  EpochMs drained_ms = 0;  // when no shard owed debt any more
  int64_t debt_peak = 0;
  std::vector<int64_t> rate_samples;  // belfry_catch_up_rate while debt was owed, every 500 ms
  EpochMs next_check = 0;
  while (true) {
    const EpochMs now = WallClockMs();
    if (now - start_ms > timeout_ms) break;
    if (belfry != nullptr && !belfry->Running()) {
      belfry_died = true;
      break;
    }
    if (drained_ms == 0 && now >= next_check) {
      next_check = now + 500;
      const int64_t debt = CatchUpDebtMinutes(conn);
      debt_peak = std::max(debt_peak, debt);
      if (!options.admin.empty() && debt > 0) {
        const int64_t rate =
            SumMetricSamples(FetchMetricsText(options.admin), "belfry_catch_up_rate", "belfry_catch_up_rate ");
        if (rate >= 0) rate_samples.push_back(rate);
      }
      // Debt appears within seconds of the start; an empty debt before that is no catch-up yet.
      if (debt == 0 && (debt_peak > 0 || now - start_ms > 60'000)) drained_ms = now;
    }
    if (drained_ms != 0 && now > window_last + grace_ms && expectations.arrived() == expectations.expected())
      break;
    if (drained_ms != 0 && now > window_last + grace_ms + 30'000) break;  // give up on stragglers
    reader.Poll(200, add);
  }
  reader.Poll(1000, add);  // a short drain, so late duplicates are counted
  meter.Stop();

  // (a): the on-time slots of the minutes during the catch-up.
  const EpochMs during_last = std::min(drained_ms != 0 ? drained_ms : window_last, window_last);
  LatencyHistogram during;
  LatencyHistogram after;
  for (const Arrival& a : on_time) {
    if (a.scheduled_for > window_last) continue;
    (a.scheduled_for <= during_last ? during : after).Record(a.received - a.scheduled_for);
  }

  nlohmann::ordered_json j;
  j["mode"] = "catchup";
  j["host"] = HostSnapshot();
  j["jobs"] = expectations.job_count();
  j["rewound_shards"] = rewind.shards;
  j["rewound_minutes"] = options.minutes;
  j["catch_up_rate"] = options.catch_up_rate.empty() ? nlohmann::ordered_json("belfry's configuration")
                                                     : nlohmann::ordered_json(options.catch_up_rate);
  j["window"] = {{"first_slot", FormatIsoTime(rewind.first_slot_ms)},
                 {"belfry_start", FormatIsoTime(start_ms)},
                 {"last_slot", FormatIsoTime(window_last)}};
  j["debt_peak_shard_minutes"] = debt_peak;
  if (!rate_samples.empty()) {
    std::vector<int64_t> sorted = rate_samples;
    std::sort(sorted.begin(), sorted.end());
    const auto at = [&](double q) { return sorted[static_cast<size_t>(q * static_cast<double>(sorted.size() - 1))]; };
    j["catch_up_rate_in_force"] = {{"samples", sorted.size()}, {"min", sorted.front()}, {"p10", at(0.1)},
                                   {"p50", at(0.5)},           {"p90", at(0.9)},       {"max", sorted.back()}};
  }
  j["catch_up_seconds"] =
      drained_ms != 0 ? nlohmann::ordered_json(static_cast<double>(drained_ms - start_ms) / 1000.0) : nullptr;
  j["last_catch_up_trigger_received_s"] =
      last_catch_up_ms != 0 ? static_cast<double>(last_catch_up_ms - start_ms) / 1000.0 : 0.0;
  j["on_time_during_catch_up"] = during.Summary();
  j["on_time_after_catch_up"] = after.Summary();
  j["catch_up_lateness"] = catch_up_lateness.Summary();
  std::vector<TriggerExpectations::MissingTrigger> examples;
  const int64_t missing = expectations.CountMissing(&examples, 10);
  tally.WriteDelivery(expectations.expected(), expectations.arrived(), missing, examples, &j);
  if (belfry != nullptr) {
    const int64_t rss_kb = PeakRssKb(belfry->pid());
    j["belfry_peak_rss_mb"] =
        rss_kb >= 0 ? nlohmann::ordered_json(static_cast<double>(rss_kb) / 1024.0) : nullptr;
    j["belfry_exit"] = belfry->Stop(15'000);
    j["belfry_died_early"] = belfry_died;
  }
  fmt::print("{}\n", j.dump(2));
  return missing == 0 && tally.duplicates() == 0 && drained_ms != 0 ? 0 : 1;
}

}  // namespace

void RegisterCatchUpMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  auto options = std::make_shared<CatchUpOptions>();
  CLI::App* sub = app.add_subcommand(
      "catchup", "rewind every shard K minutes; measure on-time lateness during belfry's paced catch-up");
  AddCommonOptions(sub, common);
  sub->add_option("--belfry-bin", options->belfry_bin, "start this belfry binary (and stop it afterwards)");
  sub->add_option("--belfry-args", options->belfry_args, "its arguments")->capture_default_str();
  sub->add_option("--belfry-log", options->belfry_log, "its stdout/stderr")->capture_default_str();
  sub->add_option(
      "--catch-up-rate", options->catch_up_rate,
      "scheduler.catch_up_rate (triggers/s, 0 = unpaced) of the belfry started with --belfry-bin; "
      "default: its configuration");
  sub->add_option("--catch-up-yield-at", options->catch_up_yield_at,
                  "scheduler.catch_up_yield_at (e.g. 500ms; 0ms = a fixed rate) of the belfry started with "
                  "--belfry-bin; default: its configuration");
  options->admin = AdminAddressFromEnv("");
  sub->add_option("--admin", options->admin,
                  "belfry's admin address, to sample belfry_catch_up_rate while debt is owed (env "
                  "BELFRY_ADMIN_LISTEN; empty: not sampled)")
      ->capture_default_str();
  sub->add_option("--minutes", options->minutes, "whole minutes to rewind (1..14)")->capture_default_str();
  sub->add_option("--window", options->window, "judge slots until this long after belfry's start")
      ->capture_default_str();
  sub->add_option("--grace", options->grace, "on-time slots start this long after belfry's start")
      ->capture_default_str();
  sub->add_option("--timeout", options->timeout, "give up after this long")->capture_default_str();
  sub->add_option("--claim-wait", options->claim_wait, "how long to wait for live shard leases to lapse")
      ->capture_default_str();
  sub->add_option("--topics-prefix", options->topics_prefix, "trigger topics (and jobs) to count")
      ->capture_default_str();
  sub->callback(
      [common, options, run] { *run = [common, options] { return RunCatchUp(*common, *options); }; });
}

}  // namespace belfry::loadtest
