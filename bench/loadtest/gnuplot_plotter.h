// GnuplotPlotter: writes PNG charts through the gnuplot binary (Debian's gnuplot-nox). Each
// chart is PREFIX-<name>.png, with its data in PREFIX-<name>.dat and the script in
// PREFIX-<name>.gp next to it, so a chart can be re-rendered or restyled by hand.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loadtest/latency_histogram.h"

namespace belfry::loadtest {

struct ThroughputSeries {
  std::string title;
  std::vector<int64_t> per_second;
};

struct XySeries {
  std::string title;
  std::vector<std::pair<double, double>> points;
};

class GnuplotPlotter final {
 public:
  // An empty prefix disables plotting: every call then returns "".
  explicit GnuplotPlotter(std::string prefix) : prefix_(std::move(prefix)) {}

  // A histogram of `histogram`'s values (x: ms, y: count), clipped at its p99.9 (times 1.5)
  // so that one outlier does not flatten the chart. Returns the PNG path, or "" on failure
  // (reported on stderr; a failed chart never fails the run).
  std::string Histogram(const std::string& name, const std::string& title, const std::string& x_label,
                        const LatencyHistogram& histogram) const;

  // Lines of events per second over time (x: seconds since start).
  std::string Throughput(const std::string& name, const std::string& title, const std::string& y_label,
                         const std::vector<ThroughputSeries>& series) const;

  // Lines with points of (x, y) series, e.g. a value sampled over minutes. Series without
  // points are left out; "" when none has any.
  std::string Lines(const std::string& name, const std::string& title, const std::string& x_label,
                    const std::string& y_label, const std::vector<XySeries>& series) const;

 private:
  std::string Render(const std::string& name, const std::string& script) const;

  const std::string prefix_;
};

}  // namespace belfry::loadtest
