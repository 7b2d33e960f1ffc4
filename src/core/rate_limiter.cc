#include "core/rate_limiter.h"

#include <algorithm>

namespace belfry {

RateLimiter::RateLimiter(int64_t rate_per_s, Clock& clock, StopSignal& stop)
    : rate_per_s_(std::max<int64_t>(0, rate_per_s)),
      grant_(std::clamp<int64_t>(rate_per_s_ / 100, 1, 1000)),
      clock_(clock),
      stop_(stop),
      bucket_(rate_per_s_, std::max<int64_t>(1, rate_per_s_ / 10), clock.NowMs()) {}

bool RateLimiter::Acquire(int64_t n) {
  if (stop_.requested()) return false;
  if (rate_per_s_ == 0) return true;
  EpochMs ready = 0;
  EpochMs now = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    now = clock_.NowMs();
    ready = bucket_.Take(n, now);
  }
  if (ready <= now) return true;
  return clock_.SleepUntil(ready, stop_);
}

}  // namespace belfry
