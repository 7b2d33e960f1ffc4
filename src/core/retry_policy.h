// RetryPolicy: backoff arithmetic and the supersession rule for retries of failed executions,
// on plain values. See docs/executions.md, "Retries".
#pragma once

#include <cstdint>
#include <optional>

#include "belfry/clock.h"

namespace belfry {

struct RetryBackoff {
  int64_t initial_ms = 60'000;
  double multiplier = 2.0;  // >= 1
  int64_t max_ms = 3'600'000;
};

// The delay before retry number `attempt` (1 = the first retry):
// min(max, initial * multiplier^(attempt-1)), without overflow for any attempt.
// REQUIRES: attempt >= 1, initial_ms >= 0, multiplier >= 1, max_ms >= initial_ms.
int64_t RetryDelayMs(const RetryBackoff& b, int32_t attempt);

// A retry of the slot `scheduled_for_ms` is superseded once the same job has succeeded for that
// slot or a later one: a newer success makes the old slot's work moot.
bool RetrySuperseded(EpochMs scheduled_for_ms, const std::optional<EpochMs>& latest_success_scheduled_for_ms);

struct RetryPlan {
  int32_t attempt = 0;  // the retry's attempt number
  EpochMs run_at_ms = 0;
};

// Whether a `failed` report for (slot, failed_attempt) schedules a retry, and when: only while
// failed_attempt < max_retries and the slot is not superseded; at failed_at + RetryDelayMs.
std::optional<RetryPlan> PlanRetry(int32_t max_retries, const RetryBackoff& b, int32_t failed_attempt,
                                   EpochMs failed_at_ms, EpochMs scheduled_for_ms,
                                   const std::optional<EpochMs>& latest_success_scheduled_for_ms);

}  // namespace belfry
