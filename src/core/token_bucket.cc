#include "core/token_bucket.h"

#include <algorithm>

namespace belfry {

// A rate of r tokens/s is r thousandths of a token per ms: integer arithmetic, no drift.
TokenBucket::TokenBucket(int64_t rate_per_s, int64_t burst, EpochMs now)
    : rate_per_s_(std::max<int64_t>(0, rate_per_s)),
      capacity_milli_(std::max<int64_t>(1, burst) * 1000),
      balance_milli_(capacity_milli_),
      at_(now) {}

int64_t TokenBucket::BalanceAt(EpochMs now) const {
  const int64_t elapsed = std::max<int64_t>(0, now - at_);
  if (balance_milli_ >= capacity_milli_) return balance_milli_;
  // Saturate: a long idle time must not overflow.
  const int64_t room = capacity_milli_ - balance_milli_;
  if (rate_per_s_ > 0 && elapsed > room / rate_per_s_) return capacity_milli_;
  return std::min(capacity_milli_, balance_milli_ + elapsed * rate_per_s_);
}

EpochMs TokenBucket::Take(int64_t n, EpochMs now) {
  if (rate_per_s_ == 0) return now;
  now = std::max(now, at_);
  balance_milli_ = BalanceAt(now) - std::max<int64_t>(0, n) * 1000;
  at_ = now;
  if (balance_milli_ >= 0) return now;
  const int64_t deficit = -balance_milli_;
  return now + (deficit + rate_per_s_ - 1) / rate_per_s_;
}

void TokenBucket::SetRate(int64_t rate_per_s, int64_t burst, EpochMs now) {
  now = std::max(now, at_);
  balance_milli_ = BalanceAt(now);
  at_ = now;
  rate_per_s_ = std::max<int64_t>(1, rate_per_s);
  capacity_milli_ = std::max<int64_t>(1, burst) * 1000;
  balance_milli_ = std::min(balance_milli_, capacity_milli_);
}

int64_t TokenBucket::Tokens(EpochMs now) const {
  const int64_t b = BalanceAt(std::max(now, at_));
  return b >= 0 ? b / 1000 : -((-b + 999) / 1000);
}

}  // namespace belfry
