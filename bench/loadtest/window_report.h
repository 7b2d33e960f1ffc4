// WindowReport: `verify`'s figures per window of slot time (5 minutes by default), for long
// runs: lateness (p50/p99/p99.9/max of first arrivals), expected, missing, unexpected and
// duplicate triggers, churn commands sent and their command -> applied latency, belfry's tick
// query quantiles (from /metrics histogram deltas), the jobs partitions' dead tuples and
// autovacuum runs, and belfry's RSS over time. Windows are [first + k*width, first + (k+1)*width),
// the last one cut at the window's last slot. Not thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "belfry/clock.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/latency_histogram.h"
#include "loadtest/trigger_expectations.h"

namespace belfry::loadtest {

class WindowReport final {
 public:
  // REQUIRES: first_ms <= last_ms, width_ms > 0.
  WindowReport(EpochMs first_ms, EpochMs last_ms, int64_t width_ms);

  size_t windows() const { return windows_.size(); }
  // The window holding `ms`, or -1 outside [first_ms, last_ms].
  int64_t WindowOf(EpochMs ms) const;
  EpochMs WindowStart(size_t window) const { return first_ms_ + static_cast<int64_t>(window) * width_ms_; }

  // One judged arrival (TriggerTally's verdict) for slot `slot_ms`, received at `received_ms`.
  void AddArrival(TriggerExpectations::Verdict verdict, EpochMs slot_ms, EpochMs received_ms);
  void AddMissing(EpochMs slot_ms);
  // An arrival found unexpected only at the end (ChurnExpectations::Totals::forbidden_seen).
  void AddLateUnexpected(EpochMs slot_ms);
  // A churn command sent at `sent_ms` whose outcome came `latency_ms` later.
  void AddCommandApplied(EpochMs sent_ms, int64_t latency_ms);
  void AddCommandSent(EpochMs sent_ms);

  struct TickQuery {
    double count = 0;
    double p50_ms = -1, p99_ms = -1, p999_ms = -1;
  };
  void SetTickQuery(size_t window, const TickQuery& q) { windows_.at(window).tick_query = q; }
  struct TableStats {
    int64_t dead_tuples = -1;  // at the window's end
    int64_t live_tuples = -1;
    int64_t autovacuums = -1;  // runs during the window, over every jobs partition
    int64_t autoanalyzes = -1;
  };
  void SetTableStats(size_t window, const TableStats& s) { windows_.at(window).table = s; }
  // belfry's VmRSS at `at_ms`.
  void AddRss(EpochMs at_ms, int64_t rss_kb);

  // {"width_s", "windows": [{...} per window], "rss_mb": [[minute, MB], ...]}.
  nlohmann::ordered_json Json() const;
  // PREFIX-windows.csv, and charts (with their .dat and .gp) of RSS, lateness and tick query
  // per window. Returns the files written.
  std::vector<std::string> WriteFiles(const std::string& prefix) const;

 private:
  struct Window {
    LatencyHistogram lateness;
    int64_t missing = 0;
    int64_t duplicates = 0;
    int64_t unexpected = 0;
    int64_t commands_sent = 0;
    LatencyHistogram command_to_applied;
    TickQuery tick_query;
    TableStats table;
  };

  const EpochMs first_ms_;
  const EpochMs last_ms_;
  const int64_t width_ms_;
  std::vector<Window> windows_;
  std::vector<std::pair<EpochMs, int64_t>> rss_;  // (at, KiB)
};

}  // namespace belfry::loadtest
