#include "loadtest/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace belfry::loadtest {

LatencyHistogram::LatencyHistogram() : positive_(kBuckets, 0), negative_(kBuckets, 0) {}

int LatencyHistogram::BucketOf(uint64_t magnitude) {
  if (magnitude < kExactLimit) return static_cast<int>(magnitude);
  const int exponent = 63 - std::countl_zero(magnitude);  // >= 10
  const int sub = static_cast<int>((magnitude >> (exponent - 6)) & (kSubBuckets - 1));
  return std::min(kBuckets - 1, kExactLimit + (exponent - 10) * kSubBuckets + sub);
}

int64_t LatencyHistogram::LowerBound(int bucket) {
  if (bucket < kExactLimit) return bucket;
  const int exponent = 10 + (bucket - kExactLimit) / kSubBuckets;
  const int sub = (bucket - kExactLimit) % kSubBuckets;
  return (int64_t{1} << exponent) + (static_cast<int64_t>(sub) << (exponent - 6));
}

void LatencyHistogram::Record(int64_t ms) {
  if (ms >= 0) {
    ++positive_[BucketOf(static_cast<uint64_t>(ms))];
  } else {
    ++negative_[BucketOf(static_cast<uint64_t>(-(ms + 1)) + 1)];
  }
  min_ = count_ == 0 ? ms : std::min(min_, ms);
  max_ = count_ == 0 ? ms : std::max(max_, ms);
  sum_ += static_cast<double>(ms);
  ++count_;
}

std::vector<std::pair<int64_t, int64_t>> LatencyHistogram::Buckets() const {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int b = kBuckets - 1; b >= 0; --b) {
    if (negative_[b] > 0) out.emplace_back(-LowerBound(b), negative_[b]);
  }
  for (int b = 0; b < kBuckets; ++b) {
    if (positive_[b] > 0) out.emplace_back(LowerBound(b), positive_[b]);
  }
  return out;
}

int64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  if (p >= 100) return max_;
  const auto target = static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  int64_t seen = 0;
  for (const auto& [value, n] : Buckets()) {
    seen += n;
    if (seen >= std::max<int64_t>(1, target)) return std::clamp(value, min_, max_);
  }
  return max_;
}

nlohmann::ordered_json LatencyHistogram::Summary() const {
  nlohmann::ordered_json j;
  j["count"] = count_;
  j["min_ms"] = min_;
  j["p50_ms"] = Percentile(50);
  j["p90_ms"] = Percentile(90);
  j["p99_ms"] = Percentile(99);
  j["p999_ms"] = Percentile(99.9);
  j["max_ms"] = max_;
  j["mean_ms"] = std::round(mean() * 10) / 10;
  return j;
}

}  // namespace belfry::loadtest
