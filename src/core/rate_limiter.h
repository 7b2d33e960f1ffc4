// RateLimiter: one TokenBucket shared by threads, waiting through the injected Clock. Paces the
// catch-up: every debt firing of a node takes its triggers from the same limiter
// (scheduler.catch_up_rate), so the catch-up leaves the present its headroom. A governed limiter
// also hears the lateness of the node's on-time firings and lets a CatchUpGovernor move its rate
// between 1% of that ceiling and the ceiling (scheduler.catch_up_yield_at, docs/catch-up.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "belfry/clock.h"
#include "belfry/stop_signal.h"
#include "core/catch_up_governor.h"
#include "core/token_bucket.h"

namespace belfry {

// Thread-safe.
class RateLimiter final {
 public:
  // rate_per_s == 0: unlimited (Acquire never waits, and a governor is ignored). The bucket
  // holds 100 ms of tokens. With `governor`, the rate starts at its min_rate and follows it;
  // its max_rate is `rate_per_s`. `clock` and `stop` must outlive the limiter.
  RateLimiter(int64_t rate_per_s, Clock& clock, StopSignal& stop,
              std::optional<CatchUpGovernorOptions> governor = std::nullopt);
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Takes `n` tokens, waiting until they are paid for. Returns false iff `stop` was requested
  // (then the caller should stop what it is pacing).
  bool Acquire(int64_t n);

  // An on-time firing finished `lateness_ms` after its slot: a governed limiter adjusts its
  // rate (others ignore it). Returns the rate now in force (0: unlimited).
  int64_t OnOnTimeFired(int64_t lateness_ms);

  // How many tokens a caller should take at a time: ~10 ms worth of the ceiling, so that a
  // waiter sleeps about 100 times a second rather than once per trigger. 1 when unlimited.
  int64_t grant() const { return grant_; }
  bool unlimited() const { return max_rate_ == 0; }
  // The rate in force, triggers/s (0: unlimited).
  int64_t rate() const { return rate_.load(std::memory_order_relaxed); }

 private:
  const int64_t max_rate_;
  const int64_t grant_;
  Clock& clock_;
  StopSignal& stop_;
  std::mutex mu_;
  TokenBucket bucket_;
  std::optional<CatchUpGovernor> governor_;
  std::atomic<int64_t> rate_;
};

}  // namespace belfry
