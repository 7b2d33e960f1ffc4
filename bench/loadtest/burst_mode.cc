// burst: belfry's maximum trigger throughput, through its catch-up path. With belfry stopped,
// every shard's fired_through is rewound (and its catch-up debt cleared) so that the last K whole
// minutes (plus the current minute up to now) are unfired; belfry is then started (by this mode
// with --belfry-bin, with scheduler.catch_up_rate 0 so that the catch-up is unpaced; or by the
// operator, who should set it so too) and fires them all at once: its first firings move the
// watermarks to the present and record the missed minutes as debt, which debt firings drain. The time from
// start to the last expected trigger received is the burst; its rate is compared with `raw` sending the same
// number of same-size messages to as many topics and partitions, in the same run.
//
// Two ways to time it (--timing):
//   acks (default): like `raw`, from the first trigger produced (its Kafka CreateTime) to the
//     moment every expected trigger is acknowledged, read from belfry's own ledger (a shard's
//     fired_through moves only after every ack of its on-time slots, and a debt chunk leaves the
//     debt only after every ack of its slots: a shard is done when its watermark has reached the
//     cut and its debt is empty). The triggers are consumed and
//     checked (missing, duplicates) afterwards, so the checking does not take CPU from the burst.
//   arrivals: from the first to the last expected trigger received by a consumer running during
//     the burst (the consumer competes with belfry, PostgreSQL and the broker for the cores).
//
// REQUIRES: belfry's misfire policy fire_all (the default) and max_catchup > K minutes.
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/iso_time.h"
#include "core/slot_math.h"
#include "loadtest/belfry_process.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/kafka_admin.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/pg_connection.h"
#include "loadtest/progress_meter.h"
#include "loadtest/shard_rewind.h"
#include "loadtest/trigger_expectations.h"
#include "loadtest/trigger_tally.h"

namespace belfry::loadtest {
namespace {

struct BurstOptions {
  std::string belfry_bin;
  std::string belfry_args = "serve";
  std::string belfry_log = "belfry-burst.log";
  int32_t minutes = 1;
  std::string timeout = "5m";
  std::string claim_wait = "15s";
  std::string topics_prefix = "lt.triggers.";
  bool no_raw = false;
  std::string raw_topic = "lt.raw";
  std::string plot_prefix;
  std::string timing = "acks";
  std::string catch_up_rate = "0";  // scheduler.catch_up_rate of the belfry this mode starts
};

// How many shards have acknowledged every slot up to `cut_ms`: fired_through has reached the
// shard's last slot minute at or before the cut (a shard that never fired has not) and no missed
// minute is still owed as catch-up debt.
int64_t ShardsAckedThrough(PgConnection& conn, int64_t tick_ms, EpochMs cut_ms) {
  int64_t acked = 0;
  for (const std::vector<std::string>& row : conn.Exec("SELECT shard, fired_through FROM shard_state WHERE "
                                                       "fired_through IS NOT NULL AND isempty(debt)")) {
    const int32_t shard = std::stoi(row[0]);
    if (std::stoll(row[1]) >= LastSlotMinuteAtOrBefore(cut_ms, shard, tick_ms)) ++acked;
  }
  return acked;
}

int RunBurst(const CommonOptions& common, const BurstOptions& options) {
  const int64_t timeout_ms = ParseDurationMs(options.timeout);
  if (options.minutes < 1 || options.minutes > 14) throw std::invalid_argument("--minutes must be in 1..14");

  PgConnection conn(common.database_url, "");
  TriggerExpectations expectations;
  fmt::print(stderr, "burst: reading jobs with topic prefix {} ...\n", options.topics_prefix);
  expectations.Load(conn, options.topics_prefix);
  WaitForNoLiveLeases(conn, ParseDurationMs(options.claim_wait));

  LiveTopicReader reader(LiveTopicReaderOptions{common.brokers,
                                                "^" + RegexEscape(options.topics_prefix) + ".*",
                                                kTriggerHeaders, "belfry-loadtest-burst"});
  // Rewind: minutes C-K .. C-1 of every shard, and minute C up to now, become unfired.
  const Rewind rewind = RewindShards(conn, options.minutes);
  const EpochMs window_first = rewind.first_slot_ms;
  const EpochMs cut_ms = rewind.cut_ms;
  expectations.SetWindow(window_first, cut_ms);
  fmt::print(stderr,
             "burst: rewound {} shards to fired_through={}; expecting {} triggers for slots {} .. {}\n",
             rewind.shards, rewind.fired_through, expectations.expected(), FormatIsoTime(window_first),
             FormatIsoTime(cut_ms));

  std::unique_ptr<BelfryProcess> belfry;
  const EpochMs start_ms = WallClockMs();
  if (!options.belfry_bin.empty()) {
    belfry = std::make_unique<BelfryProcess>(options.belfry_bin, SplitArgs(options.belfry_args),
                                             std::vector<std::pair<std::string, std::string>>{
                                                 {"BELFRY_DATABASE_URL", common.database_url},
                                                 {"BELFRY_KAFKA_BROKERS", common.brokers},
                                                 {"BELFRY_KAFKA_COMMANDS_TOPIC", common.commands_topic},
                                                 {"BELFRY_KAFKA_RESULTS_TOPIC", common.results_topic},
                                                 {"BELFRY_SCHEDULER_CATCH_UP_RATE", options.catch_up_rate}},
                                             options.belfry_log);
    fmt::print(stderr, "burst: started {} {} (pid {}, log {})\n", options.belfry_bin, options.belfry_args,
               belfry->pid(), options.belfry_log);
  } else {
    fmt::print(stderr, "burst: start belfry now (waiting up to {} for the triggers)\n", options.timeout);
  }

  const bool by_acks = options.timing == "acks";
  const int64_t shard_count = rewind.shards;
  const int64_t tick_ms = shard_count > 0 ? kMsPerMinute / shard_count : kMsPerMinute;
  TriggerTally* tally_ptr = nullptr;
  ProgressMeter meter("burst", [&tally_ptr] { return tally_ptr->ProgressText(); });
  ProgressCounter* arrived = meter.AddCounter("expected seen", expectations.expected());
  ProgressCounter* acked = by_acks ? meter.AddCounter("shards acked", shard_count) : nullptr;
  TriggerTally tally(&expectations, arrived);
  tally_ptr = &tally;
  EpochMs first_created_ms = 0;  // earliest CreateTime among the expected triggers read
  const auto add = [&](const LiveRecord& r) {
    const int64_t before = expectations.arrived();
    tally.Add(r);
    if (expectations.arrived() > before && r.timestamp_ms > 0 &&
        (first_created_ms == 0 || r.timestamp_ms < first_created_ms)) {
      first_created_ms = r.timestamp_ms;
    }
  };
  meter.Start();
  bool belfry_died = false;
  EpochMs all_acked_ms = 0;
  if (by_acks) {
    // Nothing is consumed until every shard has acknowledged the window.
    int64_t shards_done = 0;
    while (shards_done < shard_count) {
      if (WallClockMs() - start_ms > timeout_ms) break;
      if (belfry != nullptr && !belfry->Running()) {
        belfry_died = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const int64_t now_done = ShardsAckedThrough(conn, tick_ms, cut_ms);
      if (now_done > shards_done) acked->Add(now_done - shards_done);
      shards_done = now_done;
    }
    if (shards_done == shard_count) all_acked_ms = WallClockMs();
    // Acknowledged triggers are all readable: stop after 10 s without a record.
    for (int idle_s = 0; expectations.arrived() < expectations.expected() && idle_s < 10;) {
      idle_s = reader.Poll(1000, add) == 0 ? idle_s + 1 : 0;
    }
  } else {
    while (expectations.arrived() < expectations.expected()) {
      if (WallClockMs() - start_ms > timeout_ms) break;
      if (belfry != nullptr && !belfry->Running()) {
        belfry_died = true;
        break;
      }
      reader.Poll(200, add);
    }
  }
  // A short drain, so duplicates sent right after the last expected trigger are counted.
  reader.Poll(1000, add);
  meter.Stop();

  nlohmann::ordered_json j;
  j["mode"] = "burst";
  j["host"] = HostSnapshot();
  j["jobs"] = expectations.job_count();
  j["rewound_shards"] = rewind.shards;
  j["rewound_minutes"] = options.minutes;
  j["window"] = {{"first_slot", FormatIsoTime(window_first)}, {"last_slot", FormatIsoTime(cut_ms)}};
  if (belfry != nullptr) {
    const int64_t rss_kb = PeakRssKb(belfry->pid());
    j["belfry_peak_rss_mb"] =
        rss_kb >= 0 ? nlohmann::ordered_json(static_cast<double>(rss_kb) / 1024.0) : nullptr;
    j["belfry_exit"] = belfry->Stop(15'000);
    j["belfry_died_early"] = belfry_died;
  }
  std::vector<TriggerExpectations::MissingTrigger> examples;
  const int64_t missing = expectations.CountMissing(&examples, 10);
  tally.WriteDelivery(expectations.expected(), expectations.arrived(), missing, examples, &j);

  // acks: first trigger produced -> every expected trigger acknowledged; arrivals: first -> last
  // expected trigger received. An acks run that did not finish (timeout, belfry died) has no rate.
  const EpochMs first_ms = by_acks ? first_created_ms : tally.first_arrival_ms();
  const EpochMs last_ms = by_acks ? all_acked_ms : tally.last_arrival_ms();
  const bool timed = first_ms > 0 && last_ms > first_ms;
  const double from_first_s = timed ? static_cast<double>(last_ms - first_ms) / 1000.0 : 0;
  const double from_start_s = timed ? static_cast<double>(last_ms - start_ms) / 1000.0 : 0;
  const double received = static_cast<double>(expectations.arrived());
  j["timing"] = options.timing;
  j["seconds_first_to_last"] = from_first_s;
  j["triggers_per_s"] = from_first_s > 0 ? received / from_first_s : 0;
  if (belfry != nullptr) {
    j["seconds_start_to_last"] = from_start_s;
    j["triggers_per_s_from_start"] = from_start_s > 0 ? received / from_start_s : 0;
  }
  const int64_t avg_size = tally.received() > 0 ? tally.value_bytes() / tally.received() : 300;
  j["value_bytes_avg"] = avg_size;

  const GnuplotPlotter plotter(options.plot_prefix);
  nlohmann::ordered_json plots = nlohmann::ordered_json::array();
  const std::string burst_plot =
      plotter.Throughput("throughput", "burst: expected triggers received per second", "triggers/s",
                         {{"catch-up triggers received", meter.PerSecond(arrived)}});
  if (!burst_plot.empty()) plots.push_back(burst_plot);

  if (!options.no_raw && expectations.arrived() > 0) {
    // The same number of same-size messages, to as many topics with as many partitions.
    const std::map<std::string, int32_t> partitions = ListTopicPartitions(common.brokers);
    int32_t per_topic = 4;
    if (!expectations.topics().empty() && partitions.count(expectations.topics()[0]) > 0) {
      per_topic = partitions.at(expectations.topics()[0]);
    }
    RawOptions raw;
    raw.messages = expectations.arrived();
    raw.size = static_cast<size_t>(avg_size);
    raw.topic = options.raw_topic;
    raw.topics = static_cast<int32_t>(std::max<size_t>(1, expectations.topics().size()));
    raw.partitions = per_topic;
    raw.plot_prefix = options.plot_prefix.empty() ? "" : options.plot_prefix + "-raw";
    fmt::print(stderr, "burst: raw producer, {} messages of {} bytes to {} topics ...\n", raw.messages,
               raw.size, raw.topics);
    const nlohmann::ordered_json raw_result = RunRaw(common, raw, "burst-raw");
    j["raw"] = raw_result;
    const double raw_rate = raw_result["msgs_per_s"].get<double>();
    j["burst_percent_of_raw"] = raw_rate > 0 ? 100.0 * j["triggers_per_s"].get<double>() / raw_rate : 0;
    if (raw_result.contains("plots")) {
      for (const auto& p : raw_result["plots"]) plots.push_back(p);
    }
  }
  if (!plots.empty()) j["plots"] = plots;
  fmt::print("{}\n", j.dump(2));
  return missing == 0 ? 0 : 1;
}

}  // namespace

void RegisterBurstMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  auto options = std::make_shared<BurstOptions>();
  CLI::App* sub = app.add_subcommand(
      "burst", "rewind every shard K minutes and time belfry's catch-up (its maximum trigger throughput)");
  AddCommonOptions(sub, common);
  sub->add_option("--belfry-bin", options->belfry_bin, "start this belfry binary (and stop it afterwards)");
  sub->add_option("--belfry-args", options->belfry_args, "its arguments")->capture_default_str();
  sub->add_option("--belfry-log", options->belfry_log, "its stdout/stderr")->capture_default_str();
  sub->add_option("--minutes", options->minutes, "whole minutes to rewind (1..14)")->capture_default_str();
  sub->add_option("--timeout", options->timeout, "give up after this long")->capture_default_str();
  sub->add_option("--claim-wait", options->claim_wait, "how long to wait for live shard claims to lapse")
      ->capture_default_str();
  sub->add_option("--topics-prefix", options->topics_prefix, "trigger topics (and jobs) to count")
      ->capture_default_str();
  sub->add_option("--timing", options->timing,
                  "acks: first trigger produced to last acknowledged (consumed and checked afterwards); "
                  "arrivals: first to last received by a consumer running during the burst")
      ->check(CLI::IsMember({"acks", "arrivals"}))
      ->capture_default_str();
  sub->add_option("--catch-up-rate", options->catch_up_rate,
                  "scheduler.catch_up_rate (triggers/s, 0 = unpaced) of the belfry started with --belfry-bin")
      ->capture_default_str();
  sub->add_flag("--no-raw", options->no_raw, "skip the raw-producer comparison");
  sub->add_option("--raw-topic", options->raw_topic, "topic prefix for the raw comparison")
      ->capture_default_str();
  sub->add_option("--plot", options->plot_prefix, "write PREFIX-throughput.png (and the raw run's charts)");
  sub->callback([common, options, run] { *run = [common, options] { return RunBurst(*common, *options); }; });
}

}  // namespace belfry::loadtest
