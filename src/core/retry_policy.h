// RetryPolicy: backoff arithmetic, the supersession rule, retry placement and the ids of retry
// rows, on plain values. See docs/executions.md, "Retries".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "belfry/clock.h"
#include "belfry/job.h"

namespace belfry {

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

// The limits a job's retry settings must respect (checked at ingestion).
inline constexpr int32_t kMaxRetriesLimit = 100;
inline constexpr int64_t kMaxRetryDelayMs = 7LL * 24 * 3600 * 1000;  // 7 days
inline constexpr double kMaxRetryMultiplier = 10.0;

// Ids of the rows that hold scheduled retries: "<job>#retry#<scheduledFor ms>#<attempt>"
// (core/derived_row_id.h). The id is deterministic, so a second failure report for the same
// (job, slot, attempt) finds the row already there.
std::string RetryRowId(std::string_view job_id, EpochMs scheduled_for_ms, int32_t attempt);

struct RetryRowRef {
  std::string_view job_id;
  int32_t attempt = 0;
};
// The job and attempt of a retry row's id; nullopt for any other id.
std::optional<RetryRowRef> ParseRetryRowId(std::string_view id);

}  // namespace belfry
