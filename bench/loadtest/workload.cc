#include "loadtest/workload.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace belfry::loadtest {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

IntervalMix IntervalMix::Parse(std::string_view text) {
  IntervalMix mix;
  double total = 0;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      throw std::invalid_argument(fmt::format("interval mix entry '{}' is not INTERVAL:WEIGHT", entry));
    }
    int32_t interval = 0;
    const std::string_view interval_text = Trim(entry.substr(0, colon));
    const auto [ip, iec] =
        std::from_chars(interval_text.data(), interval_text.data() + interval_text.size(), interval);
    double weight = 0;
    const std::string weight_text(Trim(entry.substr(colon + 1)));
    size_t used = 0;
    try {
      weight = std::stod(weight_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (iec != std::errc() || ip != interval_text.data() + interval_text.size() || interval <= 0 ||
        1440 % interval != 0 || used != weight_text.size() || !(weight > 0)) {
      throw std::invalid_argument(fmt::format(
          "interval mix entry '{}': want a divisor of 1440 minutes and a positive weight", entry));
    }
    mix.weights_.push_back(IntervalWeight{interval, weight});
    total += weight;
  }
  if (mix.weights_.empty()) throw std::invalid_argument("interval mix is empty");
  double running = 0;
  for (const IntervalWeight& w : mix.weights_) {
    running += w.weight;
    mix.cumulative_.push_back(running / total);
  }
  mix.cumulative_.back() = 1.0;
  return mix;
}

int32_t IntervalMix::Pick(std::mt19937_64& rng) const {
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  for (size_t i = 0; i < cumulative_.size(); ++i) {
    if (u < cumulative_[i]) return weights_[i].interval_minutes;
  }
  return weights_.back().interval_minutes;
}

double IntervalMix::FiringsPerJobMinute() const {
  double total = 0;
  double firings = 0;
  for (const IntervalWeight& w : weights_) {
    total += w.weight;
    firings += w.weight / w.interval_minutes;
  }
  return firings / total;
}

std::string IntervalMix::ToString() const {
  std::string out;
  for (const IntervalWeight& w : weights_) {
    if (!out.empty()) out.push_back(',');
    out += fmt::format("{}:{}", w.interval_minutes, w.weight);
  }
  return out;
}

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string MakeJobDetails(uint64_t n, size_t bytes) {
  const uint64_t h = Mix64(n);
  const uint64_t shipment = 10'000'000 + n;
  std::string out =
      fmt::format(R"({{"shipmentId":{},"carrier":"CARRIER-{:03d}","mode":"{}","reference":"PO-{:010d}",)"
                  R"("pollUrl":"https://carrier-{:03d}.example.com/api/v2/shipments/{}/status","attempt":{})",
                  shipment, h % 500, (h >> 9) % 3 == 0 ? "LTL" : "TL", (h >> 12) % 10'000'000'000ULL, h % 500,
                  shipment, (h >> 40) % 4);
  // Pad with a field of hex digits so the value compresses like real, varied data.
  if (out.size() + 10 < bytes) {
    out.append(",\"pad\":\"");
    uint64_t bits = h;
    while (out.size() + 2 < bytes) {
      out.push_back("0123456789abcdef"[bits & 15]);
      bits >>= 4;
      if (bits == 0) bits = Mix64(h + out.size());
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

}  // namespace belfry::loadtest
