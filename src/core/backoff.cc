#include "core/backoff.h"

#include <algorithm>

namespace belfry {
namespace {

struct Bounds {
  int64_t initial_ms;
  int64_t max_ms;
};

Bounds Normalize(const BackoffPolicy& policy) {
  const int64_t initial = std::max<int64_t>(1, policy.initial_ms);
  return Bounds{initial, std::max(initial, policy.max_ms)};
}

// splitmix64 (Steele, Lea, Flood 2014): a full-period 64-bit generator whose outputs pass
// BigCrush; more than enough to spread retries.
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

int64_t BackoffCeilingMs(const BackoffPolicy& policy, int64_t failures) {
  const Bounds b = Normalize(policy);
  int64_t ceiling = b.initial_ms;
  // Doubling stops at the cap, so neither the shift nor the product can overflow.
  for (int64_t n = 1; n < failures && ceiling < b.max_ms; ++n) {
    ceiling = ceiling > b.max_ms / 2 ? b.max_ms : ceiling * 2;
  }
  return std::min(ceiling, b.max_ms);
}

int64_t JitteredBackoffMs(const BackoffPolicy& policy, int64_t failures, uint64_t random) {
  const int64_t ceiling = BackoffCeilingMs(policy, failures);
  const int64_t floor = ceiling - ceiling / 2;
  const auto span = static_cast<uint64_t>(ceiling - floor) + 1;
  return floor + static_cast<int64_t>(random % span);
}

Backoff::Backoff(BackoffPolicy policy, uint64_t seed) : policy_(policy), state_(seed) {}

int64_t Backoff::NextDelayMs() {
  if (failures_ < INT64_MAX) ++failures_;
  return JitteredBackoffMs(policy_, failures_, SplitMix64(state_));
}

}  // namespace belfry
