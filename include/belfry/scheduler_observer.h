// SchedulerObserver: what the scheduler reports for metrics and logs. The metrics registry
// (src/http) implements it; tests may record calls. Implementations must be thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "belfry/status.h"

namespace belfry {

struct ShardMinuteReport {
  int32_t shard = 0;
  int64_t first_minute = 0;
  int64_t last_minute = 0;
  bool coalesced = false;
  bool on_time = true;
  int64_t triggers = 0;     // sent and acknowledged
  int64_t refused = 0;      // dropped by the output-topic policy
  int64_t undeliverable = 0;  // refused by the broker for good (record errors), dead-lettered
  int64_t query_ms = 0;     // until the last row arrived
  int64_t total_ms = 0;     // claim to last ack
  int64_t lateness_ms = 0;  // last ack time - the (last) slot time
};

class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  virtual void OnFired(const ShardMinuteReport& r) = 0;
  virtual void OnMissed(int64_t caught_up, int64_t skipped, int64_t too_old) = 0;
  virtual void OnFiringFailed(int32_t shard, const Status& status) = 0;
  virtual void OnRefusedTopic(std::string_view topic) = 0;
  // Releasing a claim (after a firing that recorded nothing) failed. Nothing is lost: the lease
  // expires by itself and the shard is fired again then, only later than it could have been.
  virtual void OnReleaseFailed(int32_t shard, const Status& status) = 0;
  // One trigger refused for good by the broker (a record error; `reason` as in TriggerFailure).
  virtual void OnTriggerRefused(std::string_view reason) { (void)reason; }
  // A retry after a broker error re-sent the `triggers` this node kept in memory as not
  // acknowledged, instead of querying its range again (core/unacked_triggers.h).
  virtual void OnUnackedResent(int64_t triggers) { (void)triggers; }
  // A retry after a broker error re-queries a whole range, re-sending its acknowledged triggers
  // too: `reason` as in UnackedTriggers (over_bound, claim_lost, untracked, ...).
  virtual void OnUnackedRequery(std::string_view reason) { (void)reason; }
  // The catch-up debt of every shard, in shard-minutes still owed, as a catch-up scan read it.
  virtual void OnCatchUpDebt(int64_t owed_minutes) { (void)owed_minutes; }
  // A catch-up scan could not read the shards' ledger (docs/catch-up.md); the next tick's scan
  // tries again. Until one succeeds, missed minutes, dead nodes' claims and debts wait.
  virtual void OnScanFailed(const Status& status) { (void)status; }
  // The catch-up rate in force on this node, triggers/s, after an on-time firing steered it
  // (docs/catch-up.md, "Pacing").
  virtual void OnCatchUpRate(int64_t per_second) { (void)per_second; }
};

// Does nothing; the default.
class NullSchedulerObserver final : public SchedulerObserver {
 public:
  void OnFired(const ShardMinuteReport&) override {}
  void OnMissed(int64_t, int64_t, int64_t) override {}
  void OnFiringFailed(int32_t, const Status&) override {}
  void OnRefusedTopic(std::string_view) override {}
  void OnReleaseFailed(int32_t, const Status&) override {}
};

}  // namespace belfry
