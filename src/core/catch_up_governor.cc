#include "core/catch_up_governor.h"

#include <algorithm>

namespace belfry {

CatchUpGovernor::CatchUpGovernor(const CatchUpGovernorOptions& options, EpochMs now) : options_(options) {
  options_.max_rate = std::max<int64_t>(1, options_.max_rate);
  options_.min_rate = std::clamp<int64_t>(options_.min_rate, 1, options_.max_rate);
  options_.yield_at_ms = std::max<int64_t>(1, options_.yield_at_ms);
  options_.ramp_ms = std::max<int64_t>(1, options_.ramp_ms);
  options_.hold_ms = std::max<int64_t>(0, options_.hold_ms);
  rate_ = options_.min_rate;
  last_report_ = now;
  last_halving_ = now - options_.hold_ms;
}

int64_t CatchUpGovernor::OnOnTimeFired(int64_t lateness_ms, EpochMs now) {
  now = std::max(now, last_report_);
  const int64_t elapsed = std::min(now - last_report_, options_.ramp_ms);  // a ramp reaches max
  last_report_ = now;
  if (lateness_ms > options_.yield_at_ms) {
    increase_milli_ = 0;
    if (now - last_halving_ >= options_.hold_ms) {
      rate_ = std::max(options_.min_rate, rate_ / 2);
      last_halving_ = now;
      ++yields_;
    }
    return rate_;
  }
  // elapsed <= ramp_ms and max_rate <= 1e8 keep this product far from overflow.
  increase_milli_ += elapsed * options_.max_rate * 1000 / options_.ramp_ms;
  const int64_t whole = increase_milli_ / 1000;
  increase_milli_ -= whole * 1000;
  rate_ = std::min(options_.max_rate, rate_ + whole);
  if (rate_ == options_.max_rate) increase_milli_ = 0;
  return rate_;
}

}  // namespace belfry
