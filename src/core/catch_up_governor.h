// CatchUpGovernor: the catch-up rate as a plain value, steered by the lateness of the present.
// A catch-up is extra load on the same PostgreSQL, broker and cores that fire today's slots, and
// how much of it the machine can carry depends on what else it does. So the rate is not a fixed
// number: it is additive-increase, multiplicative-decrease (AIMD, as TCP's congestion window), and
// the congestion signal is the lateness of the on-time firings (docs/catch-up.md, "Pacing").
//
//   - An on-time firing later than `yield_at_ms` halves the rate, down to `min_rate`, at most once
//     per `hold_ms` (the firings of one congested second report together: one halving for them).
//   - Otherwise the rate grows by max_rate per `ramp_ms` of time, up to `max_rate`.
//   - It starts at `min_rate` and ramps: after a restart the present needs its headroom first.
//
// `min_rate` keeps the catch-up moving however busy the present is. Time is passed in; not
// thread-safe (RateLimiter holds it under its lock).
#pragma once

#include <cstdint>

#include "belfry/clock.h"

namespace belfry {

struct CatchUpGovernorOptions {
  int64_t max_rate = 100'000;  // triggers/s; REQUIRES > 0
  int64_t min_rate = 1'000;    // triggers/s; clamped to [1, max_rate]
  int64_t yield_at_ms = 500;   // on-time lateness above this halves the rate; REQUIRES > 0
  int64_t ramp_ms = 30'000;    // from 0 to max_rate by additive increase; values below 1 count as 1
  int64_t hold_ms = 1'000;     // at most one halving per this long
};

class CatchUpGovernor final {
 public:
  CatchUpGovernor(const CatchUpGovernorOptions& options, EpochMs now);

  // An on-time firing finished `lateness_ms` after its slot. Returns the rate from `now` on.
  // Time never runs backwards for the governor (an earlier `now` counts as the last one seen).
  int64_t OnOnTimeFired(int64_t lateness_ms, EpochMs now);

  int64_t rate() const { return rate_; }
  // Late on-time firings it acted on (a halving, or holding at the floor).
  int64_t yields() const { return yields_; }

 private:
  CatchUpGovernorOptions options_;
  int64_t rate_;
  int64_t yields_ = 0;
  EpochMs last_report_;
  EpochMs last_halving_;
  int64_t increase_milli_ = 0;  // thousandths of a trigger/s earned but not yet added
};

}  // namespace belfry
