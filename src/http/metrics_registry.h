// MetricsRegistry: belfry's Prometheus metrics. It is the scheduler's SchedulerObserver, takes
// command-batch outcomes from the command consumer, and renders the text exposition format
// (0.0.4) that AdminServer serves on /metrics. prometheus-cpp's own HTTP exposer is not used.
//
// Thread-safety: every method may be called from any thread, concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "belfry/scheduler_observer.h"
#include "belfry/status.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace belfry {

class MetricsRegistry final : public SchedulerObserver {
 public:
  // Called at the start of every Serialize(), to refresh gauges that are sampled rather than
  // pushed (consumer lag, producer queue). It receives this registry.
  using Sampler = std::function<void(MetricsRegistry&)>;

  // `version` becomes the label of belfry_build_info.
  explicit MetricsRegistry(std::string version);
  ~MetricsRegistry() override;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // SchedulerObserver.
  void OnFired(const ShardMinuteReport& r) override;
  void OnMissed(int64_t caught_up, int64_t skipped, int64_t too_old) override;
  void OnFiringFailed(int32_t shard, const Status& status) override;
  void OnRefusedTopic(std::string_view topic) override;
  void OnTriggerRefused(std::string_view reason) override;
  void OnUnackedResent(int64_t triggers) override;
  void OnUnackedRequery(std::string_view reason) override;
  void OnReleaseFailed(int32_t shard, const Status& status) override;
  void OnScanFailed(const Status& status) override;
  void OnCatchUpDebt(int64_t owed_minutes) override;
  void OnCatchUpRate(int64_t per_second) override;

  // One committed command batch (see CommandBatchReport in src/kafka/command_consumer.h).
  // `apply_latency_ms` is observed only when the batch applied at least one command. Label values
  // beyond a fixed number of distinct ops / reasons are folded into "other", so a misbehaving
  // producer cannot blow up the series count.
  void OnCommandBatch(const std::map<std::string, uint64_t>& applied_by_op,
                      const std::map<std::string, uint64_t>& rejected_by_reason, int64_t apply_latency_ms);

  // Sampled gauges. A negative lag means "not known yet" and is exported as NaN.
  void SetConsumerLag(int64_t messages);
  void SetProducerQueue(int64_t messages);
  void SetCatchUpProducerQueue(int64_t messages);
  void SetReady(bool ready);  // belfry_ready: what GET /readyz would answer now

  // Replaces the sampler (an empty function removes it). The sampler must not call
  // Serialize() or SetSampler().
  void SetSampler(Sampler sampler);

  // Runs the sampler, then renders every metric in the Prometheus text format, version 0.0.4.
  std::string Serialize();

  // The underlying registry, for components that register metrics of their own. Lives as long
  // as this object.
  prometheus::Registry& registry();

 private:
  struct Metrics;
  std::unique_ptr<Metrics> m_;
};

}  // namespace belfry
