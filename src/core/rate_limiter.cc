#include "core/rate_limiter.h"

#include <algorithm>

namespace belfry {
namespace {

int64_t BurstFor(int64_t rate_per_s) { return std::max<int64_t>(1, rate_per_s / 10); }

}  // namespace

RateLimiter::RateLimiter(int64_t rate_per_s, Clock& clock, StopSignal& stop,
                         std::optional<CatchUpGovernorOptions> governor)
    : max_rate_(std::max<int64_t>(0, rate_per_s)),
      grant_(std::clamp<int64_t>(max_rate_ / 100, 1, 1000)),
      clock_(clock),
      stop_(stop),
      bucket_(max_rate_, BurstFor(max_rate_), clock.NowMs()),
      rate_(max_rate_) {
  if (governor && max_rate_ > 0) {
    governor->max_rate = max_rate_;
    const EpochMs now = clock.NowMs();
    governor_.emplace(*governor, now);
    bucket_.SetRate(governor_->rate(), BurstFor(governor_->rate()), now);
    rate_ = governor_->rate();
  }
}

bool RateLimiter::Acquire(int64_t n) {
  if (stop_.requested()) return false;
  if (max_rate_ == 0) return true;
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

int64_t RateLimiter::OnOnTimeFired(int64_t lateness_ms) {
  if (!governor_) return rate();
  std::lock_guard<std::mutex> lock(mu_);
  const EpochMs now = clock_.NowMs();
  const int64_t before = governor_->rate();
  const int64_t after = governor_->OnOnTimeFired(lateness_ms, now);
  if (after != before) bucket_.SetRate(after, BurstFor(after), now);
  rate_.store(after, std::memory_order_relaxed);
  return after;
}

}  // namespace belfry
