// TokenBucket: a rate limit as a plain value. Tokens accrue at `rate_per_s` up to `burst`; Take()
// debits at once (the balance may go negative) and says when the debit is covered, so a caller
// waits (through its Clock) until then. Time is passed in: no clock, no sleeping.
#pragma once

#include <cstdint>

#include "belfry/clock.h"

namespace belfry {

class TokenBucket final {
 public:
  // Starts full. rate_per_s == 0 means unlimited: Take() always returns `now`.
  // REQUIRES: rate_per_s >= 0, burst >= 1.
  TokenBucket(int64_t rate_per_s, int64_t burst, EpochMs now);

  // Takes `n` tokens and returns the earliest time at which they are paid for: `now` if the
  // bucket held them, later if it went into deficit. Time never runs backwards for the bucket
  // (an earlier `now` counts as the last one seen).
  EpochMs Take(int64_t n, EpochMs now);

  // The balance at `now` (negative while in deficit), in whole tokens, rounded down.
  int64_t Tokens(EpochMs now) const;

  // From `now` on, tokens accrue at `rate_per_s` up to `burst` (what accrued before `now` at the
  // old rate stays, down to the new burst). A deficit stays owed: it is paid at the new rate.
  // REQUIRES: rate_per_s > 0 (a governed bucket is never unlimited), burst >= 1.
  void SetRate(int64_t rate_per_s, int64_t burst, EpochMs now);

  int64_t rate_per_s() const { return rate_per_s_; }

 private:
  int64_t BalanceAt(EpochMs now) const;  // in thousandths of a token

  int64_t rate_per_s_;
  int64_t capacity_milli_;
  int64_t balance_milli_;
  EpochMs at_;
};

}  // namespace belfry
