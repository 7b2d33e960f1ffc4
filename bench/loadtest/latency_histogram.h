// LatencyHistogram: fixed-size (about 50 KB) histogram of signed millisecond values, exact
// below 1024 ms and within 1/64 (1.6%) above. Negative values (a trigger seen before its
// scheduledFor: clock skew between hosts) are kept in a mirrored half. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace belfry::loadtest {

class LatencyHistogram final {
 public:
  LatencyHistogram();

  void Record(int64_t ms);
  int64_t count() const { return count_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0 : sum_ / static_cast<double>(count_); }
  // The value at percentile p in [0, 100] (the bucket's lower bound); 0 when empty.
  int64_t Percentile(double p) const;
  // (bucket lower bound ms, count) for every non-empty bucket, ascending.
  std::vector<std::pair<int64_t, int64_t>> Buckets() const;
  // {"count","min_ms","p50_ms","p90_ms","p99_ms","p999_ms","max_ms","mean_ms"}.
  nlohmann::ordered_json Summary() const;

 private:
  static constexpr int kExactLimit = 1024;
  static constexpr int kSubBuckets = 64;
  static constexpr int kBuckets = kExactLimit + (63 - 10) * kSubBuckets;

  static int BucketOf(uint64_t magnitude);
  static int64_t LowerBound(int bucket);

  std::vector<int64_t> positive_;  // value >= 0
  std::vector<int64_t> negative_;  // value < 0, by magnitude
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  double sum_ = 0;
};

}  // namespace belfry::loadtest
