#include "loadtest/window_report.h"

#include <fmt/format.h>

#include <fstream>

#include "core/iso_time.h"

namespace belfry::loadtest {
namespace {

nlohmann::ordered_json OrNull(double v) {
  return v < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

}  // namespace

WindowReport::WindowReport(EpochMs first_ms, EpochMs last_ms, int64_t width_ms)
    : first_ms_(first_ms), last_ms_(last_ms), width_ms_(width_ms) {
  windows_.resize(static_cast<size_t>((last_ms - first_ms) / width_ms + 1));
}

int64_t WindowReport::WindowOf(EpochMs ms) const {
  if (ms < first_ms_ || ms > last_ms_) return -1;
  return (ms - first_ms_) / width_ms_;
}

void WindowReport::AddArrival(TriggerExpectations::Verdict verdict, EpochMs slot_ms, EpochMs received_ms) {
  const int64_t w = WindowOf(slot_ms);
  if (w < 0) return;
  Window& window = windows_[static_cast<size_t>(w)];
  switch (verdict) {
    case TriggerExpectations::Verdict::kExpected:
      window.lateness.Record(received_ms - slot_ms);
      break;
    case TriggerExpectations::Verdict::kDuplicate:
      ++window.duplicates;
      break;
    case TriggerExpectations::Verdict::kUnknownJob:
    case TriggerExpectations::Verdict::kNotDue:
      ++window.unexpected;
      break;
    case TriggerExpectations::Verdict::kOutsideWindow:
    case TriggerExpectations::Verdict::kManual:
      break;
  }
}

void WindowReport::AddMissing(EpochMs slot_ms) {
  if (const int64_t w = WindowOf(slot_ms); w >= 0) ++windows_[static_cast<size_t>(w)].missing;
}

void WindowReport::AddLateUnexpected(EpochMs slot_ms) {
  if (const int64_t w = WindowOf(slot_ms); w >= 0) ++windows_[static_cast<size_t>(w)].unexpected;
}

void WindowReport::AddCommandSent(EpochMs sent_ms) {
  if (const int64_t w = WindowOf(sent_ms); w >= 0) ++windows_[static_cast<size_t>(w)].commands_sent;
}

void WindowReport::AddCommandApplied(EpochMs sent_ms, int64_t latency_ms) {
  if (const int64_t w = WindowOf(sent_ms); w >= 0)
    windows_[static_cast<size_t>(w)].command_to_applied.Record(latency_ms);
}

void WindowReport::AddRss(EpochMs at_ms, int64_t rss_kb) { rss_.emplace_back(at_ms, rss_kb); }

nlohmann::ordered_json WindowReport::Json() const {
  nlohmann::ordered_json out;
  out["width_s"] = width_ms_ / 1000;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i < windows_.size(); ++i) {
    const Window& w = windows_[i];
    nlohmann::ordered_json j;
    j["first_slot"] = FormatIsoTime(WindowStart(i));
    j["expected_received"] = w.lateness.count();
    j["missing"] = w.missing;
    j["unexpected"] = w.unexpected;
    j["duplicates"] = w.duplicates;
    j["lateness_ms"] = {{"p50", w.lateness.Percentile(50)},
                        {"p99", w.lateness.Percentile(99)},
                        {"p999", w.lateness.Percentile(99.9)},
                        {"max", w.lateness.max()}};
    if (w.commands_sent > 0 || w.command_to_applied.count() > 0) {
      j["commands_sent"] = w.commands_sent;
      j["command_to_applied_ms"] = {{"count", w.command_to_applied.count()},
                                    {"p50", w.command_to_applied.Percentile(50)},
                                    {"p99", w.command_to_applied.Percentile(99)},
                                    {"max", w.command_to_applied.max()}};
    }
    j["tick_query_ms"] = {{"count", w.tick_query.count},
                          {"p50", OrNull(w.tick_query.p50_ms)},
                          {"p99", OrNull(w.tick_query.p99_ms)},
                          {"p999", OrNull(w.tick_query.p999_ms)}};
    if (w.table.dead_tuples >= 0) {
      j["jobs_tables"] = {{"dead_tuples", w.table.dead_tuples},
                          {"live_tuples", w.table.live_tuples},
                          {"autovacuums", w.table.autovacuums},
                          {"autoanalyzes", w.table.autoanalyzes}};
    }
    list.push_back(std::move(j));
  }
  out["windows"] = std::move(list);
  if (!rss_.empty()) {
    nlohmann::ordered_json rss = nlohmann::ordered_json::array();
    for (const auto& [at, kb] : rss_)
      rss.push_back({static_cast<double>(at - first_ms_) / 60'000.0, static_cast<double>(kb) / 1024.0});
    out["rss_mb_by_minute"] = std::move(rss);
  }
  return out;
}

std::vector<std::string> WindowReport::WriteFiles(const std::string& prefix) const {
  std::vector<std::string> files;
  if (prefix.empty()) return files;
  {
    const std::string path = prefix + "-windows.csv";
    std::ofstream csv(path);
    csv << "window,first_slot,expected_received,missing,unexpected,duplicates,lateness_p50_ms,lateness_p99_"
           "ms,"
           "lateness_p999_ms,lateness_max_ms,commands_sent,command_to_applied_p99_ms,tick_query_count,"
           "tick_query_p99_ms,tick_query_p999_ms,dead_tuples,autovacuums\n";
    for (size_t i = 0; i < windows_.size(); ++i) {
      const Window& w = windows_[i];
      csv << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i,
                         FormatIsoTime(WindowStart(i)), w.lateness.count(), w.missing, w.unexpected,
                         w.duplicates, w.lateness.Percentile(50), w.lateness.Percentile(99),
                         w.lateness.Percentile(99.9), w.lateness.max(), w.commands_sent,
                         w.command_to_applied.Percentile(99), w.tick_query.count, w.tick_query.p99_ms,
                         w.tick_query.p999_ms, w.table.dead_tuples, w.table.autovacuums);
    }
    if (csv) files.push_back(path);
  }
  const GnuplotPlotter plotter(prefix);
  const auto minute_of = [&](size_t i) { return static_cast<double>(WindowStart(i) - first_ms_) / 60'000.0; };
  std::vector<XySeries> lateness = {{"p99", {}}, {"p99.9", {}}, {"max", {}}};
  std::vector<XySeries> tick = {{"p99", {}}, {"p99.9", {}}};
  for (size_t i = 0; i < windows_.size(); ++i) {
    const Window& w = windows_[i];
    if (w.lateness.count() > 0) {
      lateness[0].points.emplace_back(minute_of(i), static_cast<double>(w.lateness.Percentile(99)));
      lateness[1].points.emplace_back(minute_of(i), static_cast<double>(w.lateness.Percentile(99.9)));
      lateness[2].points.emplace_back(minute_of(i), static_cast<double>(w.lateness.max()));
    }
    if (w.tick_query.p99_ms >= 0) {
      tick[0].points.emplace_back(minute_of(i), w.tick_query.p99_ms);
      tick[1].points.emplace_back(minute_of(i), w.tick_query.p999_ms);
    }
  }
  std::vector<XySeries> rss = {{"belfry VmRSS", {}}};
  for (const auto& [at, kb] : rss_)
    rss[0].points.emplace_back(static_cast<double>(at - first_ms_) / 60'000.0,
                               static_cast<double>(kb) / 1024.0);
  for (const std::string& path :
       {plotter.Lines("rss", "verify: belfry resident set size", "minutes since the window opened", "MB",
                      rss),
        plotter.Lines("window-lateness", "verify: trigger lateness per window (by window start)",
                      "minutes since the window opened", "ms", lateness),
        plotter.Lines("window-tick-query", "verify: belfry tick query per window (from /metrics buckets)",
                      "minutes since the window opened", "ms", tick)}) {
    if (!path.empty()) files.push_back(path);
  }
  return files;
}

}  // namespace belfry::loadtest
