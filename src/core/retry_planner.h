// RetryPlanner: which retries a batch of new `failed` reports schedules, decided on plain values
// (the reports, the retried jobs' settings, their latest successes and the time). The store runs
// it inside the transaction that stores the reports. See docs/executions.md, "Retries".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "belfry/clock.h"
#include "belfry/execution.h"
#include "belfry/job.h"
#include "belfry/shard_layout.h"

namespace belfry {

// A job that allows retries, with what its retry triggers carry.
struct RetryTarget {
  std::string id;
  int32_t shard = 0;
  std::string owner;
  std::string topic;
  std::string key;  // the trigger key: the job's key, or its id when it has none
  std::string details_json;
  int32_t interval_minutes = 0;
  int32_t priority = 0;
  int32_t max_retries = 0;
  RetryBackoff backoff;
};

struct RetryRules {
  // The shard layout the retries' minutes are planned by (docs/resharding.md): the config's, or
  // during a reshard the database's record (PgExecutionStore reads it per batch).
  ShardLayout layout;
  // A retry due more than this long ago when its failure is stored (the consumer lagged, or a
  // replay of old reports) is not scheduled, like a missed slot beyond the catch-up window.
  int64_t max_late_ms = 15 * 60 * 1000;
};

// One retry to store as a one-shot row.
struct ScheduledRetry {
  std::string row_id;  // RetryRowId(job, scheduled_for_ms, attempt)
  const RetryTarget* target = nullptr;
  EpochMs scheduled_for_ms = 0;  // the original slot, carried by the retry trigger
  int32_t attempt = 0;
  EpochMs run_at_ms = 0;   // failed at + backoff
  int64_t run_minute = 0;  // the first minute whose slot of the shard is at or after run_at_ms
};

struct RetryPlanning {
  std::vector<ScheduledRetry> retries;  // in row-id order
  int64_t too_late = 0;
};

// For each `failed` report (others are ignored) whose job is in `targets`: PlanRetry with the
// job's latest success, the failure's time (finishedAt, else the message timestamp, else now)
// and its backoff. Reports of the same (job, slot, attempt) give one retry.
RetryPlanning PlanRetries(const std::vector<ExecutionReport>& reports,
                          const std::map<std::string, RetryTarget>& targets,
                          const std::map<std::string, std::optional<EpochMs>>& latest_success,
                          const RetryRules& rules, EpochMs now_ms);

}  // namespace belfry
