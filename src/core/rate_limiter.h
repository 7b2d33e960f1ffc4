// RateLimiter: one TokenBucket shared by threads, waiting through the injected Clock. Paces the
// catch-up: every debt firing of a node takes its triggers from the same limiter
// (scheduler.catch_up_rate), so the catch-up leaves the present its headroom.
#pragma once

#include <cstdint>
#include <mutex>

#include "belfry/clock.h"
#include "belfry/stop_signal.h"
#include "core/token_bucket.h"

namespace belfry {

// Thread-safe.
class RateLimiter final {
 public:
  // rate_per_s == 0: unlimited (Acquire never waits). The bucket holds 100 ms of tokens.
  // `clock` and `stop` must outlive the limiter.
  RateLimiter(int64_t rate_per_s, Clock& clock, StopSignal& stop);
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Takes `n` tokens, waiting until they are paid for. Returns false iff `stop` was requested
  // (then the caller should stop what it is pacing).
  bool Acquire(int64_t n);

  // How many tokens a caller should take at a time: ~10 ms worth, so that a waiter sleeps about
  // 100 times a second rather than once per trigger. 1 when unlimited.
  int64_t grant() const { return grant_; }
  bool unlimited() const { return rate_per_s_ == 0; }

 private:
  const int64_t rate_per_s_;
  const int64_t grant_;
  Clock& clock_;
  StopSignal& stop_;
  std::mutex mu_;
  TokenBucket bucket_;
};

}  // namespace belfry
