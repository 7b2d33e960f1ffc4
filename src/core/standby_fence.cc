#include "core/standby_fence.h"

#include <algorithm>

namespace belfry {

StandbyVerdict JudgeStandby(int64_t fence, int64_t replayed, int64_t waited_ms, bool lagging,
                            const StandbyFenceRule& rule) {
  if (replayed >= fence) return StandbyVerdict::kRead;
  const int64_t bound = lagging ? std::min(rule.lagging_wait_ms, rule.max_wait_ms) : rule.max_wait_ms;
  if (waited_ms >= bound) return StandbyVerdict::kFallBack;
  return StandbyVerdict::kWait;
}

const char* DueQueryServerName(DueQueryRoute::Server server) {
  return server == DueQueryRoute::Server::kStandby ? "standby" : "primary";
}

const char* DueQueryReasonName(DueQueryRoute::Reason reason) {
  switch (reason) {
    case DueQueryRoute::Reason::kNone:
      return "none";
    case DueQueryRoute::Reason::kNoFence:
      return "no_fence";
    case DueQueryRoute::Reason::kBehind:
      return "behind";
    case DueQueryRoute::Reason::kUnavailable:
      return "unavailable";
    case DueQueryRoute::Reason::kFailed:
      return "failed";
  }
  return "none";
}

}  // namespace belfry
