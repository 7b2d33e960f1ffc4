// verify: consumes every trigger topic (lt.triggers.*) from "now" for a duration and checks the
// arrivals against the jobs table: every (job, slot) due inside the window
// [start + grace, end - grace] must arrive exactly once. Reports missing (exit code 1 if any),
// duplicates, unexpected triggers, lateness (receive time - scheduledFor) and triggers/min.
//
// The job table is read once, before the window opens, so verify assumes no commands change
// the verified jobs during the run (it reports whether any did).
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/iso_time.h"
#include "loadtest/belfry_process.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/pg_connection.h"
#include "loadtest/progress_meter.h"
#include "loadtest/shard_rewind.h"
#include "loadtest/trigger_expectations.h"
#include "loadtest/trigger_tally.h"

namespace belfry::loadtest {
namespace {

struct VerifyOptions {
  std::string duration = "5m";
  std::string grace = "5s";
  std::string topics_prefix = "lt.triggers.";
  int belfry_pid = 0;
  size_t missing_examples = 10;
  std::string plot_prefix;
};

std::string SqlLiteral(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  return out + "'";
}

int RunVerify(const CommonOptions& common, const VerifyOptions& options) {
  const int64_t duration_ms = ParseDurationMs(options.duration);
  const int64_t grace_ms = ParseDurationMs(options.grace);
  if (duration_ms <= 2 * grace_ms)
    throw std::invalid_argument("--duration must be longer than twice --grace");

  PgConnection conn(common.database_url, "");
  const EpochMs load_started_ms = WallClockMs();
  TriggerExpectations expectations;
  fmt::print(stderr, "verify: reading jobs with topic prefix {} ...\n", options.topics_prefix);
  expectations.Load(conn, options.topics_prefix);
  fmt::print(stderr, "verify: {} jobs ({} paused), {} topics, shard_count {}\n", expectations.job_count(),
             expectations.paused_jobs(), expectations.topics().size(), expectations.shard_count());

  LiveTopicReader reader(LiveTopicReaderOptions{common.brokers,
                                                "^" + RegexEscape(options.topics_prefix) + ".*",
                                                kTriggerHeaders, "belfry-loadtest-verify"});
  const EpochMs start_ms = reader.started_at_ms();
  const EpochMs end_ms = start_ms + duration_ms;
  const EpochMs window_first = start_ms + grace_ms;
  const EpochMs window_last = end_ms - grace_ms;
  expectations.SetWindow(window_first, window_last);
  const int64_t debt_at_start = CatchUpDebtMinutes(conn);
  if (debt_at_start > 0) {
    fmt::print(stderr,
               "verify: a catch-up is running ({} shard-minutes owed): its triggers are outside the window, "
               "but it competes with the on-time firing measured here\n",
               debt_at_start);
  }
  fmt::print(stderr, "verify: window {} .. {}: {} expected triggers ({:.0f}/min) on {} partitions\n",
             FormatIsoTime(window_first), FormatIsoTime(window_last), expectations.expected(),
             expectations.expected_per_minute(), reader.assigned_partitions());

  TriggerTally* tally_ptr = nullptr;
  ProgressMeter meter("verify", [&tally_ptr] { return tally_ptr->ProgressText(); });
  ProgressCounter* arrived = meter.AddCounter("expected seen", expectations.expected());
  TriggerTally tally(&expectations, arrived);
  tally_ptr = &tally;
  meter.Start();
  while (true) {
    const EpochMs now = WallClockMs();
    if (now >= end_ms) break;
    reader.Poll(std::min<int64_t>(200, end_ms - now), [&](const LiveRecord& r) { tally.Add(r); });
  }
  meter.Stop();

  std::vector<TriggerExpectations::MissingTrigger> examples;
  const int64_t missing = expectations.CountMissing(&examples, options.missing_examples);
  const double window_minutes = static_cast<double>(window_last - window_first) / 60'000.0;

  nlohmann::ordered_json j;
  j["mode"] = "verify";
  j["host"] = HostSnapshot();
  j["window"] = {{"first_slot", FormatIsoTime(window_first)},
                 {"last_slot", FormatIsoTime(window_last)},
                 {"minutes", window_minutes},
                 {"grace_ms", grace_ms}};
  j["jobs"] = expectations.job_count();
  j["paused_jobs"] = expectations.paused_jobs();
  j["topics"] = expectations.topics().size();
  j["partitions"] = reader.assigned_partitions();
  j["expected"] = expectations.expected();
  j["received"] = expectations.arrived();
  j["missing"] = missing;
  nlohmann::ordered_json missing_list = nlohmann::ordered_json::array();
  for (const auto& m : examples)
    missing_list.push_back(fmt::format("{} @ {}", m.job_id, FormatIsoTime(m.slot_ms)));
  if (!examples.empty()) j["missing_examples"] = missing_list;
  const nlohmann::ordered_json counts = tally.Json();
  for (const auto& [key, value] : counts.items()) j[key] = value;
  j["lateness"] = tally.lateness().Summary();
  j["triggers_per_min"] =
      window_minutes > 0 ? static_cast<double>(expectations.arrived()) / window_minutes : 0;
  j["expected_per_min"] = expectations.expected_per_minute();
  j["messages_per_s"] = static_cast<double>(tally.received()) / (static_cast<double>(duration_ms) / 1000.0);
  j["value_bytes_avg"] = tally.received() > 0 ? tally.value_bytes() / tally.received() : 0;
  j["reader_errors"] = reader.consume_errors();
  j["catch_up_debt_minutes"] = {{"at_start", debt_at_start}, {"at_end", CatchUpDebtMinutes(conn)}};
  if (options.belfry_pid > 0) {
    const int64_t kb = PeakRssKb(options.belfry_pid);
    j["belfry_peak_rss_mb"] = kb >= 0 ? nlohmann::ordered_json(static_cast<double>(kb) / 1024.0) : nullptr;
  }
  try {
    const PgRows changed = conn.Exec(fmt::format(
        "SELECT count(*), count(*) FILTER (WHERE updated_at >= to_timestamp({} / 1000.0)) FROM jobs "
        "WHERE left(topic, {}) = {}",
        load_started_ms, options.topics_prefix.size(), SqlLiteral(options.topics_prefix)));
    const int64_t now_jobs = std::stoll(changed[0][0]);
    const int64_t updated = std::stoll(changed[0][1]);
    j["jobs_changed_during_run"] = now_jobs != static_cast<int64_t>(expectations.job_count()) || updated > 0;
  } catch (const std::exception& e) {
    j["jobs_changed_during_run"] = std::string("unknown: ") + e.what();
  }
  const GnuplotPlotter plotter(options.plot_prefix);
  nlohmann::ordered_json plots = nlohmann::ordered_json::array();
  for (const std::string& path :
       {plotter.Histogram("lateness", "verify: trigger lateness (receive - scheduledFor)", "ms",
                          tally.lateness()),
        plotter.Throughput("throughput", "verify: expected triggers received per second", "triggers/s",
                           {{"first arrivals of expected triggers", meter.PerSecond(arrived)}})}) {
    if (!path.empty()) plots.push_back(path);
  }
  if (!plots.empty()) j["plots"] = plots;
  fmt::print("{}\n", j.dump(2));
  return missing == 0 ? 0 : 1;
}

}  // namespace

void RegisterVerifyMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* sub = app.add_subcommand(
      "verify",
      "consume all trigger topics for a duration; check every due (job, slot) arrived exactly once");
  AddCommonOptions(sub, common);
  sub->add_option("--duration", options->duration, "how long to consume (e.g. 5m, 300s)")
      ->capture_default_str();
  sub->add_option("--grace", options->grace, "slots this close to either end are not judged")
      ->capture_default_str();
  sub->add_option("--topics-prefix", options->topics_prefix, "trigger topics (and jobs) to verify")
      ->capture_default_str();
  sub->add_option("--belfry-pid", options->belfry_pid, "report this process's peak RSS (VmHWM) at the end");
  sub->add_option("--missing-examples", options->missing_examples, "missing triggers to list")
      ->capture_default_str();
  sub->add_option("--plot", options->plot_prefix, "write PREFIX-lateness.png and PREFIX-throughput.png");
  sub->callback(
      [common, options, run] { *run = [common, options] { return RunVerify(*common, *options); }; });
}

}  // namespace belfry::loadtest
