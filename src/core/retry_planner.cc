#include "core/retry_planner.h"

#include <algorithm>

#include "core/retry_policy.h"
#include "core/shard_layout.h"

namespace belfry {

RetryPlanning PlanRetries(const std::vector<ExecutionReport>& reports,
                          const std::map<std::string, RetryTarget>& targets,
                          const std::map<std::string, std::optional<EpochMs>>& latest_success,
                          const RetryRules& rules, EpochMs now_ms) {
  RetryPlanning out;
  std::map<std::string, ScheduledRetry> by_id;
  for (const ExecutionReport& r : reports) {
    if (r.status != ExecutionStatus::kFailed) continue;
    const auto target = targets.find(r.job_id);
    if (target == targets.end()) continue;
    const RetryTarget& job = target->second;
    const auto success = latest_success.find(r.job_id);
    const std::optional<EpochMs> latest = success == latest_success.end() ? std::nullopt : success->second;
    const EpochMs failed_at =
        r.finished_at.value_or(r.source.timestamp_ms > 0 ? r.source.timestamp_ms : now_ms);
    const std::optional<RetryPlan> plan =
        PlanRetry(job.max_retries, job.backoff, r.attempt, failed_at, r.scheduled_for_ms, latest);
    if (!plan) continue;
    if (plan->run_at_ms < now_ms - rules.max_late_ms) {
      ++out.too_late;
      continue;
    }
    ScheduledRetry s;
    s.row_id = RetryRowId(job.id, r.scheduled_for_ms, plan->attempt);
    s.target = &job;
    s.scheduled_for_ms = r.scheduled_for_ms;
    s.attempt = plan->attempt;
    s.run_at_ms = plan->run_at_ms;
    s.run_minute = FirstLayoutMinuteAtOrAfter(rules.layout, plan->run_at_ms, job.shard);
    // Two failure reports of one attempt (say, from two workers) keep the earlier run time.
    auto [it, inserted] = by_id.try_emplace(s.row_id, s);
    if (!inserted && s.run_at_ms < it->second.run_at_ms) it->second = s;
  }
  for (auto& [id, s] : by_id) out.retries.push_back(std::move(s));
  return out;
}

}  // namespace belfry
