#include "core/retry_policy.h"

#include <algorithm>
#include <charconv>

#include "core/derived_row_id.h"
#include "core/slot_math.h"

namespace belfry {

int64_t RetryDelayMs(const RetryBackoff& b, int32_t attempt) {
  if (attempt <= 1 || b.multiplier <= 1.0) return std::min(b.initial_ms, b.max_ms);
  // Multiply step by step and stop at the cap: no pow(), no overflow, exact for integral
  // multipliers while below the cap.
  double delay = static_cast<double>(b.initial_ms);
  for (int32_t i = 1; i < attempt; ++i) {
    delay *= b.multiplier;
    if (delay >= static_cast<double>(b.max_ms)) return b.max_ms;
  }
  return std::min(static_cast<int64_t>(delay), b.max_ms);
}

bool RetrySuperseded(EpochMs scheduled_for_ms,
                     const std::optional<EpochMs>& latest_success_scheduled_for_ms) {
  return latest_success_scheduled_for_ms.has_value() && *latest_success_scheduled_for_ms >= scheduled_for_ms;
}

std::optional<RetryPlan> PlanRetry(int32_t max_retries, const RetryBackoff& b, int32_t failed_attempt,
                                   EpochMs failed_at_ms, EpochMs scheduled_for_ms,
                                   const std::optional<EpochMs>& latest_success_scheduled_for_ms) {
  if (failed_attempt < 0 || failed_attempt >= max_retries) return std::nullopt;
  if (RetrySuperseded(scheduled_for_ms, latest_success_scheduled_for_ms)) return std::nullopt;
  const int32_t next = failed_attempt + 1;
  return RetryPlan{next, failed_at_ms + RetryDelayMs(b, next)};
}

std::string RetryRowId(std::string_view job_id, EpochMs scheduled_for_ms, int32_t attempt) {
  return DerivedRowId(job_id, DerivedKind::kRetry, scheduled_for_ms, attempt);
}

std::optional<RetryRowRef> ParseRetryRowId(std::string_view id) {
  const std::optional<DerivedRowRef> ref = ParseDerivedRowId(id);
  if (!ref || ref->kind != DerivedKind::kRetry) return std::nullopt;
  return RetryRowRef{ref->job_id, ref->attempt};
}

}  // namespace belfry
