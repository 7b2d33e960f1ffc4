#include "core/retry_policy.h"

#include <algorithm>
#include <charconv>

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

int64_t FirstMinuteAtOrAfter(EpochMs run_at_ms, int32_t shard, int64_t tick_ms) {
  const int64_t minute = LastSlotMinuteAtOrBefore(run_at_ms, shard, tick_ms);
  return SlotMs(minute, shard, tick_ms) == run_at_ms ? minute : minute + 1;
}

std::string RetryRowId(std::string_view job_id, EpochMs scheduled_for_ms, int32_t attempt) {
  std::string id(job_id);
  id.append(kRetryIdMarker);
  id.append(std::to_string(scheduled_for_ms));
  id.push_back('#');
  id.append(std::to_string(attempt));
  return id;
}

std::optional<RetryRowRef> ParseRetryRowId(std::string_view id) {
  const size_t marker = id.rfind(kRetryIdMarker);
  if (marker == std::string_view::npos || marker == 0) return std::nullopt;
  const std::string_view rest = id.substr(marker + kRetryIdMarker.size());
  const size_t hash = rest.find('#');
  if (hash == std::string_view::npos) return std::nullopt;
  int64_t slot = 0;
  const char* slot_end = rest.data() + hash;
  if (auto r = std::from_chars(rest.data(), slot_end, slot); r.ec != std::errc() || r.ptr != slot_end) {
    return std::nullopt;
  }
  int32_t attempt = 0;
  const char* end = rest.data() + rest.size();
  if (auto r = std::from_chars(slot_end + 1, end, attempt); r.ec != std::errc() || r.ptr != end || attempt < 1) {
    return std::nullopt;
  }
  return RetryRowRef{id.substr(0, marker), attempt};
}

}  // namespace belfry
