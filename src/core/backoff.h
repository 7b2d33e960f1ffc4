// Backoff: the wait between retries of an infrastructure operation that failed (a database or
// broker call), exponential with "equal jitter". Every retry loop in belfry uses it; see
// docs/reliability.md, "Back-off".
//
// The n-th consecutive failure (n >= 1) has the ceiling c = min(max_ms, initial_ms * 2^(n-1)),
// and the wait is drawn uniformly from [c - c/2, c]: half of it fixed, half random. The random
// half keeps nodes that failed together (a PostgreSQL restart) from retrying in lockstep; the
// fixed half keeps a node from retrying almost at once, as full jitter (uniform in [0, c]) would.
//
// This is not the job retry schedule of execution reports (RetryDelayMs in retry_policy.h), which
// is a user's setting and has no jitter.
#pragma once

#include <cstdint>

namespace belfry {

struct BackoffPolicy {
  int64_t initial_ms = 100;  // ceiling of the first wait; values below 1 count as 1
  int64_t max_ms = 5000;     // ceiling of every wait; values below initial_ms count as initial_ms
};

// The ceiling for the `failures`-th consecutive failure: min(max_ms, initial_ms * 2^(failures-1)),
// without overflow for any `failures`. failures <= 1 gives initial_ms.
int64_t BackoffCeilingMs(const BackoffPolicy& policy, int64_t failures);

// The wait after the `failures`-th consecutive failure, given one uniformly distributed 64-bit
// `random` value: in [c - c/2, c] for c = BackoffCeilingMs(policy, failures). Pure.
int64_t JitteredBackoffMs(const BackoffPolicy& policy, int64_t failures, uint64_t random);

// One retry loop's back-off state: the consecutive failures and a pseudo-random generator
// (splitmix64) seeded by the caller. Production seeds it from std::random_device so that nodes
// differ; tests seed it with a constant and see fixed waits. A value type; not thread-safe.
class Backoff {
 public:
  Backoff(BackoffPolicy policy, uint64_t seed);

  // Counts one more failure and returns how long to wait before the next attempt, in ms.
  int64_t NextDelayMs();
  // After a success: the next failure waits about initial_ms again. The generator is not
  // re-seeded, so the next round of waits differs from the last.
  void Reset() { failures_ = 0; }

  int64_t failures() const { return failures_; }
  const BackoffPolicy& policy() const { return policy_; }

 private:
  BackoffPolicy policy_;
  int64_t failures_ = 0;
  uint64_t state_;
};

}  // namespace belfry
