// The synthetic job population shared by query_layout and belfry-loadtest: the interval mix,
// job ids and ~200-byte project44-style jobDetails. Deterministic functions of their inputs, so
// two runs (or two layouts) with the same seed see the same jobs.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace belfry::loadtest {

struct IntervalWeight {
  int32_t interval_minutes = 0;
  double weight = 0;  // relative; need not sum to 100
};

// The mix the issue describes: 40% 1-min, 10% 2, 5% each of 5/10/15/30, 10% 60, 5% 360, 15% 1440.
inline constexpr char kDefaultIntervalMix[] = "1:40,2:10,5:5,10:5,15:5,30:5,60:10,360:5,1440:15";

// Chooses intervals by weight.
class IntervalMix final {
 public:
  // Parses "I:W,I:W,...". Throws std::invalid_argument naming the bad entry; intervals must be
  // positive divisors of 1440 and weights positive.
  static IntervalMix Parse(std::string_view text);

  int32_t Pick(std::mt19937_64& rng) const;
  const std::vector<IntervalWeight>& weights() const { return weights_; }
  // The mean number of times per minute one job fires: sum(w_i / I_i) / sum(w_i).
  double FiringsPerJobMinute() const;
  std::string ToString() const;

 private:
  std::vector<IntervalWeight> weights_;
  std::vector<double> cumulative_;  // normalised to end at 1.0
};

// SplitMix64: a fast, well-mixed hash of a 64-bit integer.
uint64_t Mix64(uint64_t x);

// A project44-style jobDetails object, minified, of length `bytes` (or a little more when
// `bytes` is too small for the fixed fields), different for every n.
std::string MakeJobDetails(uint64_t n, size_t bytes);

}  // namespace belfry::loadtest
