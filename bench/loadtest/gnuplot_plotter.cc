#include "loadtest/gnuplot_plotter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

namespace belfry::loadtest {
namespace {

// Quotes `s` for a gnuplot double-quoted string.
std::string GpQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Quotes `s` for /bin/sh.
std::string ShQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

}  // namespace

std::string GnuplotPlotter::Render(const std::string& name, const std::string& script) const {
  const std::string base = prefix_ + "-" + name;
  {
    std::ofstream gp(base + ".gp");
    gp << "set terminal pngcairo size 1000,560 noenhanced\n"
       << "set output " << GpQuote(base + ".png") << "\n"
       << script;
    if (!gp) {
      fmt::print(stderr, "plot: cannot write {}.gp\n", base);
      return "";
    }
  }
  const std::string command = "gnuplot " + ShQuote(base + ".gp") + " 2>" + ShQuote(base + ".gp.log");
  if (std::system(command.c_str()) != 0) {
    // pngcairo is absent from some gnuplot builds; fall back to the plain png terminal.
    std::ifstream in(base + ".gp");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "set terminal pngcairo size 1000,560 noenhanced";
    text.replace(text.find(from), from.size(), "set terminal png size 1000,560 noenhanced");
    std::ofstream(base + ".gp") << text;
    if (std::system(command.c_str()) != 0) {
      fmt::print(stderr, "plot: gnuplot failed for {} (see {}.gp.log)\n", base, base);
      return "";
    }
  }
  std::remove((base + ".gp.log").c_str());
  return base + ".png";
}

std::string GnuplotPlotter::Histogram(const std::string& name, const std::string& title,
                                      const std::string& x_label, const LatencyHistogram& histogram) const {
  if (prefix_.empty() || histogram.count() == 0) return "";
  const std::string data = prefix_ + "-" + name + ".dat";
  const int64_t x_max =
      std::max<int64_t>(10, static_cast<int64_t>(static_cast<double>(histogram.Percentile(99.9)) * 1.5) + 1);
  const int64_t x_min = std::min<int64_t>(0, histogram.min());
  // Re-bin into about 80 equal bins of a round width (1, 2 or 5 x 10^k ms): the histogram's own
  // buckets widen above 1 s, which would make counts jump where the width changes.
  int64_t width = 1;
  for (int64_t scale = 1;; scale *= 10) {
    if (scale * 80 >= x_max - x_min) {
      width = scale;
      break;
    }
    if (2 * scale * 80 >= x_max - x_min) {
      width = 2 * scale;
      break;
    }
    if (5 * scale * 80 >= x_max - x_min) {
      width = 5 * scale;
      break;
    }
  }
  std::map<int64_t, int64_t> bins;
  for (const auto& [value, n] : histogram.Buckets()) {
    const int64_t bin = (value >= 0 ? value / width : -((-value + width - 1) / width)) * width;
    bins[bin] += n;
  }
  {
    std::ofstream out(data);
    out << "# bin_start_ms count (bin width " << width << " ms)\n";
    for (const auto& [bin, n] : bins) out << bin << ' ' << n << '\n';
  }
  const std::string script = fmt::format(
      "set title {}\nset xlabel {}\nset ylabel \"count per {} ms\"\nset grid\nset key off\n"
      "set style fill solid 0.6 noborder\nset boxwidth {} absolute\nset xrange [{}:{}]\nset logscale y\n"
      "set label 1 {} at graph 0.98, graph 0.95 right front\n"
      "plot {} using ($1+{}):2 with boxes\n",
      GpQuote(title), GpQuote(x_label), width, width, x_min, x_max,
      GpQuote(fmt::format("n={}  p50={} ms  p99={} ms  max={} ms", histogram.count(),
                          histogram.Percentile(50), histogram.Percentile(99), histogram.max())),
      GpQuote(data), static_cast<double>(width) / 2);
  return Render(name, script);
}

std::string GnuplotPlotter::Throughput(const std::string& name, const std::string& title,
                                       const std::string& y_label,
                                       const std::vector<ThroughputSeries>& series) const {
  if (prefix_.empty() || series.empty()) return "";
  const std::string data = prefix_ + "-" + name + ".dat";
  size_t rows = 0;
  for (const ThroughputSeries& s : series) rows = std::max(rows, s.per_second.size());
  {
    std::ofstream out(data);
    out << "# second";
    for (const ThroughputSeries& s : series) out << " \"" << s.title << '"';
    out << '\n';
    for (size_t t = 0; t < rows; ++t) {
      out << t + 1;
      for (const ThroughputSeries& s : series) out << ' ' << (t < s.per_second.size() ? s.per_second[t] : 0);
      out << '\n';
    }
  }
  std::string plot = "plot ";
  for (size_t i = 0; i < series.size(); ++i) {
    if (i > 0) plot += ", ";
    plot +=
        fmt::format("{} using 1:{} with lines lw 2 title {}", GpQuote(data), i + 2, GpQuote(series[i].title));
  }
  const std::string script = fmt::format(
      "set title {}\nset xlabel \"seconds since start\"\nset ylabel {}\nset grid\nset yrange [0:*]\n{}\n",
      GpQuote(title), GpQuote(y_label), plot);
  return Render(name, script);
}

std::string GnuplotPlotter::Lines(const std::string& name, const std::string& title,
                                  const std::string& x_label, const std::string& y_label,
                                  const std::vector<XySeries>& series) const {
  if (prefix_.empty()) return "";
  const std::string data = prefix_ + "-" + name + ".dat";
  std::string plot;
  {
    std::ofstream out(data);
    int block = 0;
    for (const XySeries& s : series) {
      if (s.points.empty()) continue;
      out << "# " << s.title << '\n';
      for (const auto& [x, y] : s.points) out << x << ' ' << y << '\n';
      out << "\n\n";  // a gnuplot data block per series
      plot += fmt::format("{}{} index {} using 1:2 with linespoints lw 2 title {}",
                          plot.empty() ? "plot " : ", ", GpQuote(data), block++, GpQuote(s.title));
    }
  }
  if (plot.empty()) return "";
  const std::string script =
      fmt::format("set title {}\nset xlabel {}\nset ylabel {}\nset grid\nset yrange [0:*]\n{}\n",
                  GpQuote(title), GpQuote(x_label), GpQuote(y_label), plot);
  return Render(name, script);
}

}  // namespace belfry::loadtest
