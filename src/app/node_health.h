// NodeHealth: forwards scheduler events to the metrics and remembers enough to answer /readyz:
// whether firings are succeeding, and when the ticker last ran.
#pragma once

#include <atomic>

#include "belfry/clock.h"
#include "belfry/scheduler_observer.h"

namespace belfry {

class NodeHealth final : public SchedulerObserver {
 public:
  NodeHealth(SchedulerObserver& next, Clock& clock) : next_(next), clock_(clock) {}

  void OnFired(const ShardMinuteReport& r) override {
    consecutive_failures_ = 0;
    last_fired_ms_ = clock_.NowMs();
    next_.OnFired(r);
  }
  void OnMissed(int64_t caught_up, int64_t skipped, int64_t too_old) override {
    next_.OnMissed(caught_up, skipped, too_old);
  }
  void OnFiringFailed(int32_t shard, const Status& status) override {
    ++consecutive_failures_;
    next_.OnFiringFailed(shard, status);
  }
  void OnRefusedTopic(std::string_view topic) override { next_.OnRefusedTopic(topic); }

  int64_t consecutive_failures() const { return consecutive_failures_; }
  EpochMs last_fired_ms() const { return last_fired_ms_; }

 private:
  SchedulerObserver& next_;
  Clock& clock_;
  std::atomic<int64_t> consecutive_failures_{0};
  std::atomic<EpochMs> last_fired_ms_{0};
};

}  // namespace belfry
