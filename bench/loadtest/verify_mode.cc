// verify: consumes every trigger topic (lt.triggers.*) from "now" for a duration and checks the
// arrivals against the jobs table: every (job, slot) due inside the window
// [start + grace, end - grace] must arrive exactly once. Reports missing (exit code 1 if any),
// duplicates, unexpected triggers, lateness (receive time - scheduledFor) and triggers/min.
//
// The job table is read once, before the window opens. Without --churn-rate verify assumes no
// commands change the verified jobs during the run (it reports whether any did); with it, verify
// sends the changes itself (ChurnDriver) and follows them (ChurnExpectations). Every run also
// reports per window of slot time (WindowReport, BelfrySampler).
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/iso_time.h"
#include "loadtest/belfry_process.h"
#include "loadtest/belfry_sampler.h"
#include "loadtest/churn_driver.h"
#include "loadtest/churn_expectations.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/metrics_scrape.h"
#include "loadtest/pg_connection.h"
#include "loadtest/progress_meter.h"
#include "loadtest/shard_rewind.h"
#include "loadtest/trigger_expectations.h"
#include "loadtest/trigger_tally.h"
#include "loadtest/window_report.h"

namespace belfry::loadtest {
namespace {

struct VerifyOptions {
  std::string duration = "5m";
  std::string grace = "5s";
  std::string topics_prefix = "lt.triggers.";
  int belfry_pid = 0;
  size_t missing_examples = 10;
  std::string plot_prefix;
  // Churn (docs/loadtest.md, "verify with churn").
  std::string churn_rate;  // "N/min" or N (per minute); empty: none
  std::string churn_margin = "2s";
  std::string churn_settle = "30s";
  ChurnOptions churn;
  // Per-window report and samples.
  std::string report_window = "5m";
  std::string admin;  // for /metrics; default $BELFRY_ADMIN_LISTEN, else none
  std::string rss_every = "10s";
  // Compare GET /v1/load's projection of every whole minute of the window with what fired.
  bool check_load = false;
};

// The window's whole minutes, as GET /v1/load projected them before the window opened: minute ->
// triggers. Throws with the reason when the projection cannot be read.
std::map<int64_t, int64_t> ReadLoadProjection(const std::string& admin, int64_t first_minute, int64_t last_minute) {
  const char* token = std::getenv("BELFRY_ADMIN_TOKEN");
  const std::string raw =
      HttpGetRaw(admin,
                 "/v1/load?from=" + FormatIsoTime(first_minute * 60'000) +
                     "&to=" + FormatIsoTime((last_minute + 1) * 60'000),
                 token != nullptr ? token : "");
  const size_t body = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) {
    throw std::runtime_error("--check-load: GET /v1/load at " + admin + " failed: " + raw.substr(0, 300));
  }
  const nlohmann::json j = nlohmann::json::parse(raw.substr(body + 4));
  std::map<int64_t, int64_t> out;
  for (const nlohmann::json& m : j.at("minutes")) {
    const std::optional<EpochMs> at = ParseIsoTime(m.at("at").get<std::string>());
    if (at) out[*at / 60'000] = m.at("triggers").get<int64_t>();
  }
  return out;
}

// "10000/min", "10000" (per minute) or "200/s", as commands per minute.
double ParseChurnRate(const std::string& text) {
  std::string number = text;
  double scale = 1;
  if (const size_t slash = text.find('/'); slash != std::string::npos) {
    const std::string unit = text.substr(slash + 1);
    number = text.substr(0, slash);
    if (unit == "s") {
      scale = 60;
    } else if (unit != "min" && unit != "m") {
      throw std::invalid_argument("--churn-rate: want N/min or N/s, not '" + text + "'");
    }
  }
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
  }
  if (used != number.size() || !(value >= 0))
    throw std::invalid_argument("--churn-rate: bad rate '" + text + "'");
  return value * scale;
}

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
  const double churn_per_min = options.churn_rate.empty() ? 0 : ParseChurnRate(options.churn_rate);
  const int64_t churn_margin_ms = ParseDurationMs(options.churn_margin);
  const int64_t report_window_ms = ParseDurationMs(options.report_window);
  const int64_t rss_every_ms = ParseDurationMs(options.rss_every);
  if (report_window_ms < 1000 || rss_every_ms < 100)
    throw std::invalid_argument("--report-window must be at least 1s and --rss-every at least 100ms");

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

  // --check-load: the whole minutes inside the window, projected before they come.
  std::map<int64_t, int64_t> projected;
  std::map<int64_t, int64_t> fired_by_minute;  // first arrivals, expected or not, by slot minute
  const int64_t load_first = (window_first + 59'999) / 60'000;
  const int64_t load_last = (window_last + 1) / 60'000 - 1;
  if (options.check_load) {
    if (churn_per_min > 0) throw std::invalid_argument("--check-load compares a window no command changes: no --churn-rate");
    if (options.admin.empty()) throw std::invalid_argument("--check-load needs --admin (or BELFRY_ADMIN_LISTEN)");
    if (load_last < load_first) throw std::invalid_argument("--check-load: the window holds no whole minute");
    projected = ReadLoadProjection(options.admin, load_first, load_last);
    fmt::print(stderr, "verify: GET /v1/load projected {} whole minutes, {} .. {}\n", projected.size(),
               FormatIsoTime(load_first * 60'000), FormatIsoTime(load_last * 60'000));
  }

  WindowReport windows(window_first, window_last, report_window_ms);
  BelfrySampler sampler(options.admin, options.belfry_pid, rss_every_ms, &conn, &windows);
  std::unique_ptr<ChurnExpectations> churn;
  std::unique_ptr<ChurnDriver> churn_driver;
  if (churn_per_min > 0) {
    ChurnOptions churn_options = options.churn;
    churn_options.per_minute = churn_per_min;
    churn = std::make_unique<ChurnExpectations>(&expectations, churn_margin_ms);
    churn_driver = std::make_unique<ChurnDriver>(common, churn_options, options.topics_prefix, expectations,
                                                 churn.get(), &windows, start_ms, window_last);
    fmt::print(stderr, "verify: churn {:.0f} commands/min on jobs {}<n> (and new ones), margin {} ms\n",
               churn_per_min, churn_options.id_prefix, churn_margin_ms);
  }

  TriggerTally* tally_ptr = nullptr;
  ProgressMeter meter("verify", [&tally_ptr] { return tally_ptr->ProgressText(); });
  ProgressCounter* arrived = meter.AddCounter("expected seen", expectations.expected());
  std::unique_ptr<TriggerTally> tally_owner = churn ? std::make_unique<TriggerTally>(churn.get(), arrived)
                                                    : std::make_unique<TriggerTally>(&expectations, arrived);
  TriggerTally& tally = *tally_owner;
  tally_ptr = &tally;
  meter.Start();
  while (true) {
    const EpochMs now = WallClockMs();
    if (now >= end_ms) break;
    sampler.Poll(now);
    if (churn_driver) churn_driver->Pump(now);
    reader.Poll(std::min<int64_t>(churn_driver ? 50 : 200, end_ms - now), [&](const LiveRecord& r) {
      const TriggerExpectations::Verdict verdict = tally.Add(r);
      EpochMs slot = 0;
      if (ScheduledForOf(r, &slot)) {
        windows.AddArrival(verdict, slot, r.received_ms);
        if (options.check_load && (verdict == TriggerExpectations::Verdict::kExpected ||
                                   verdict == TriggerExpectations::Verdict::kUnknownJob ||
                                   verdict == TriggerExpectations::Verdict::kNotDue)) {
          ++fired_by_minute[slot / 60'000];
        }
      }
    });
  }
  meter.Stop();
  if (churn_driver) churn_driver->Settle(ParseDurationMs(options.churn_settle));
  sampler.Finish(WallClockMs());

  std::vector<TriggerExpectations::MissingTrigger> examples;
  int64_t missing = 0;
  const auto on_missing = [&](std::string_view id, EpochMs slot) {
    ++missing;
    windows.AddMissing(slot);
    if (examples.size() < options.missing_examples) examples.push_back({std::string(id), slot});
  };
  expectations.ForEachMissing(on_missing);
  ChurnExpectations::Totals churn_totals;
  std::vector<std::string> late_unexpected;
  if (churn) {
    churn_totals = churn->Finish(on_missing, [&](std::string_view id, EpochMs slot) {
      windows.AddLateUnexpected(slot);
      if (late_unexpected.size() < 10)
        late_unexpected.push_back(fmt::format("{} @ {}", id, FormatIsoTime(slot)));
    });
  }
  const int64_t expected_total = expectations.expected() + churn_totals.required;
  const int64_t received_total = expectations.arrived() + churn_totals.required_seen;
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
  tally.WriteDelivery(expected_total, received_total, missing, examples, &j);
  if (churn) {
    j["unexpected"]["total"] = tally.unexpected() + churn_totals.forbidden_seen;
    j["unexpected"]["forbidden_at_end"] = churn_totals.forbidden_seen;
    if (!late_unexpected.empty()) j["unexpected"]["forbidden_at_end_examples"] = late_unexpected;
    nlohmann::ordered_json c = churn_driver->Json();
    c["changed_jobs_slots"] = {{"required", churn_totals.required},
                               {"required_received", churn_totals.required_seen},
                               {"missing", churn_totals.missing},
                               {"allowed_received", churn_totals.allowed_seen},
                               {"allowed_not_received", churn_totals.allowed_absent}};
    j["churn"] = c;
  }
  bool load_matches = true;
  if (options.check_load) {
    nlohmann::ordered_json mismatches = nlohmann::ordered_json::array();
    int64_t projected_total = 0, fired_total = 0;
    for (int64_t m = load_first; m <= load_last; ++m) {
      const int64_t p = projected.count(m) ? projected[m] : -1;
      const int64_t f = fired_by_minute[m];
      projected_total += std::max<int64_t>(0, p);
      fired_total += f;
      if (p != f) mismatches.push_back({{"at", FormatIsoTime(m * 60'000)}, {"projected", p}, {"fired", f}});
    }
    load_matches = mismatches.empty();
    j["load_projection"] = {{"minutes", load_last - load_first + 1},
                            {"projected", projected_total},
                            {"fired", fired_total},
                            {"matches", load_matches},
                            {"mismatches", mismatches}};
  }
  j["lateness"] = tally.lateness().Summary();
  j["triggers_per_min"] = window_minutes > 0 ? static_cast<double>(received_total) / window_minutes : 0;
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
  for (const std::string& path : windows.WriteFiles(options.plot_prefix)) plots.push_back(path);
  if (!plots.empty()) j["plots"] = plots;
  j["by_window"] = windows.Json();
  fmt::print("{}\n", j.dump(2));
  if (churn) {
    const bool clean = missing == 0 && j["unexpected"]["total"].get<int64_t>() == 0 &&
                       churn_driver->rejected() == 0 && churn_driver->failed_deliveries() == 0;
    return clean ? 0 : 1;
  }
  return missing == 0 && load_matches ? 0 : 1;
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
  sub->add_option("--belfry-pid", options->belfry_pid,
                  "report this process's peak RSS (VmHWM) at the end, and sample its VmRSS (--rss-every)");
  sub->add_option("--missing-examples", options->missing_examples, "missing triggers to list")
      ->capture_default_str();
  sub->add_option(
      "--plot", options->plot_prefix,
      "write PREFIX-lateness.png, PREFIX-throughput.png, PREFIX-windows.csv and the per-window charts "
      "(PREFIX-rss.png, PREFIX-window-lateness.png, PREFIX-window-tick-query.png)");
  sub->add_option("--report-window", options->report_window, "width of the by_window report (slot time)")
      ->capture_default_str();
  options->admin = AdminAddressFromEnv("");
  sub->add_option(
         "--admin", options->admin,
         "belfry's admin address, for the tick query per window from /metrics (env BELFRY_ADMIN_LISTEN; "
         "empty: not sampled)")
      ->capture_default_str();
  sub->add_flag("--check-load", options->check_load,
                "compare GET /v1/load's projection of each whole minute of the window with the triggers that "
                "fired for it (exit code 1 on any difference; not with --churn-rate)");
  sub->add_option("--rss-every", options->rss_every, "with --belfry-pid, sample belfry's VmRSS this often")
      ->capture_default_str();
  sub->add_option("--churn-rate", options->churn_rate,
                  "send N commands/min of churn during the window (\"100000/min\", or N/s) and follow them");
  sub->add_option("--churn-mix", options->churn.mix, "weights of the churn ops")->capture_default_str();
  sub->add_option(
         "--churn-margin", options->churn_margin,
         "how late (or early) a shard-minute's query may start after its slot; sets the judging rule's "
         "uncertain span around each change")
      ->capture_default_str();
  sub->add_option("--churn-id-prefix", options->churn.id_prefix,
                  "id prefix of the seeded jobs churn may change")
      ->capture_default_str();
  sub->add_option("--churn-intervals", options->churn.intervals,
                  "interval mix of created and re-intervalled jobs")
      ->capture_default_str();
  sub->add_option("--churn-topics", options->churn.topics,
                  "trigger topics <prefix>0..K-1 of churned jobs (0: as many as were loaded)")
      ->capture_default_str();
  sub->add_option("--churn-seed", options->churn.seed, "random seed of the churn")->capture_default_str();
  sub->add_option("--churn-settle", options->churn_settle,
                  "after the window, wait this long for missing outcomes")
      ->capture_default_str();
  sub->callback(
      [common, options, run] { *run = [common, options] { return RunVerify(*common, *options); }; });
}

}  // namespace belfry::loadtest
