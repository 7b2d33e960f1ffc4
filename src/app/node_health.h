// NodeHealth: forwards scheduler events to the metrics and remembers enough to answer /readyz:
// whether firings are succeeding, and when the ticker last ran.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "belfry/clock.h"
#include "belfry/scheduler_observer.h"

namespace belfry {

// Counts events and lets one log line through per 10 s (the first at once), with the events
// counted since the last line. Thread-safe.
class CountedLogThrottle final {
 public:
  // Counts one event; the events to report when a line is due now, else 0.
  int64_t Count(EpochMs now) {
    const int64_t n = ++since_line_;
    EpochMs last = last_line_ms_;
    if (now - last < 10'000 || !last_line_ms_.compare_exchange_strong(last, now)) return 0;
    since_line_ -= n;
    return n;
  }

 private:
  std::atomic<int64_t> since_line_{0};
  std::atomic<EpochMs> last_line_ms_{0};
};

class NodeHealth final : public SchedulerObserver {
 public:
  NodeHealth(SchedulerObserver& next, Clock& clock) : next_(next), clock_(clock) {}

  void OnFired(const ShardMinuteReport& r) override {
    consecutive_failures_ = 0;
    {
      std::lock_guard<std::mutex> lock(shard_failures_mu_);
      shard_failures_.erase(r.shard);
    }
    last_fired_ms_ = clock_.NowMs();
    next_.OnFired(r);
  }
  // Missed minutes that are fired are owed as debt first (OnCatchUpDebt logs that); what is
  // never fired is worth a warning each time.
  void OnMissed(int64_t caught_up, int64_t skipped, int64_t too_old) override {
    if (skipped > 0 || too_old > 0) {
      spdlog::warn(
          "missed shard-minutes: {} skipped by the misfire policy, {} older than max_catchup dropped",
          skipped, too_old);
    }
    next_.OnMissed(caught_up, skipped, too_old);
  }
  void OnCatchUpDebt(int64_t owed_minutes) override {
    const int64_t before = debt_minutes_.exchange(owed_minutes);
    if (before == 0 && owed_minutes > 0) {
      spdlog::warn("catch-up started: {} missed shard-minutes owed", owed_minutes);
    } else if (before > 0 && owed_minutes == 0) {
      spdlog::info("catch-up done: no missed shard-minute is owed");
    }
    next_.OnCatchUpDebt(owed_minutes);
  }
  void OnCatchUpRate(int64_t per_second) override { next_.OnCatchUpRate(per_second); }
  void OnFiringFailed(int32_t shard, const Status& status) override {
    ++consecutive_failures_;
    // Per shard: other shards' successes do not reset it (node-wide, one poisoned shard among
    // healthy ones logged "1 consecutive failures" forever).
    int64_t n = 0;
    {
      std::lock_guard<std::mutex> lock(shard_failures_mu_);
      n = ++shard_failures_[shard];
    }
    // During an outage every shard fails every few seconds: log the first failure, then at most
    // one line per 10 s.
    const EpochMs now = clock_.NowMs();
    EpochMs last = last_failure_log_ms_;
    if (now - last >= 10'000 && last_failure_log_ms_.compare_exchange_strong(last, now)) {
      spdlog::warn("firing shard {} failed ({} consecutive failures of this shard), will retry: {}", shard, n,
                   status.ToString());
    }
    next_.OnFiringFailed(shard, status);
  }
  void OnRefusedTopic(std::string_view topic) override { next_.OnRefusedTopic(topic); }
  // A refusal is dead-lettered and counted per reason; the log gets at most one line per 10 s.
  void OnTriggerRefused(std::string_view reason) override {
    if (const int64_t n = refusal_log_.Count(clock_.NowMs()); n > 0) {
      spdlog::warn("{} trigger(s) refused by the broker for good (the last: {}) went to the trigger DLQ; "
                   "see belfry_triggers_refused_total and the jobs' lastDeliveryError",
                   n, reason);
    }
    next_.OnTriggerRefused(reason);
  }
  void OnUnackedResent(int64_t triggers) override { next_.OnUnackedResent(triggers); }
  void OnUnackedRequery(std::string_view reason) override { next_.OnUnackedRequery(reason); }
  // Every tick scans while the ledger cannot be read (on Citus, while a worker is down): log the
  // first failure, then at most one line per 10 s with the count.
  void OnScanFailed(const Status& status) override {
    if (const int64_t n = scan_failure_log_.Count(clock_.NowMs()); n > 0) {
      spdlog::warn("{} catch-up scan(s) could not read the shard ledger; missed minutes and dead nodes' "
                   "shards wait for a scan that succeeds: {}",
                   n, status.ToString());
    }
    next_.OnScanFailed(status);
  }
  void OnReleaseFailed(int32_t shard, const Status& status) override {
    spdlog::warn("releasing the claim of shard {} failed; its lease will expire instead: {}", shard,
                 status.ToString());
    next_.OnReleaseFailed(shard, status);
  }

  // Node-wide: firings that failed since the last one that succeeded (any shard).
  int64_t consecutive_failures() const { return consecutive_failures_; }
  // Firings of `shard` that failed since its last one that succeeded.
  int64_t shard_consecutive_failures(int32_t shard) const {
    std::lock_guard<std::mutex> lock(shard_failures_mu_);
    const auto it = shard_failures_.find(shard);
    return it == shard_failures_.end() ? 0 : it->second;
  }
  EpochMs last_fired_ms() const { return last_fired_ms_; }

 private:
  SchedulerObserver& next_;
  Clock& clock_;
  std::atomic<int64_t> consecutive_failures_{0};
  std::atomic<EpochMs> last_fired_ms_{0};
  std::atomic<EpochMs> last_failure_log_ms_{0};
  std::atomic<int64_t> debt_minutes_{0};
  CountedLogThrottle refusal_log_;
  CountedLogThrottle scan_failure_log_;
  mutable std::mutex shard_failures_mu_;
  std::unordered_map<int32_t, int64_t> shard_failures_;  // guarded by shard_failures_mu_
};

}  // namespace belfry
