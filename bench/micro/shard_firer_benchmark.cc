// ShardFirer::FireUpTo: the firing path's own work per shard-minute (claim, plan, stream the due
// jobs into the sink, wait for the acks, record), over in-memory fakes and a sink that acks every
// trigger at once, so that the firer's cost is what is measured, not a broker's. Issue 33's
// record-error handling must cost nothing when every trigger is acknowledged.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "belfry/scheduler_observer.h"
#include "core/shard_firer.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_job_store.h"
#include "fakes/fake_shard_ledger.h"

namespace belfry::bench {
namespace {

// Acknowledges every trigger as it is added; keeps nothing.
class AckingBatch final : public TriggerBatch {
 public:
  void Add(const TriggerView& t) override { benchmark::DoNotOptimize(t.job_id.data()); }
  Status Finish() override { return Status::Ok(); }
  bool Done() override { return true; }
  void NotifyWhenDone(std::function<void()> fn) override { fn(); }
  std::vector<TriggerFailure> Failures() override { return {}; }
  void Resend(const TriggerFailure&) override {}
};

class AckingSink final : public TriggerSink {
 public:
  std::unique_ptr<TriggerBatch> NewBatch() override { return std::make_unique<AckingBatch>(); }
};

constexpr int64_t kM = 29922577;
constexpr int32_t kShard = 7;

void BM_FireShardMinute(benchmark::State& state) {
  SchedulerConfig cfg;
  FakeClock clock(SlotMs(kM, kShard, cfg.tick_ms));
  FakeJobStore store;
  FakeShardLedger ledger(120, clock);
  AckingSink sink;
  TopicPolicy policy({"*"}, {});
  NullSchedulerObserver observer;
  ShardFirer firer(cfg, "bench", store, ledger, sink, policy, clock, observer);
  const int64_t jobs = state.range(0);
  for (int64_t n = 0, added = 0; added < jobs; ++n) {
    const std::string id = "job-" + std::to_string(n);
    if (ShardForId(id, 120) != kShard) continue;
    JobSpec s;
    s.id = id;
    s.interval_minutes = 1;
    s.shard = kShard;
    s.topic = "out.bench";
    s.details_json = R"({"n":1})";
    store.Put(s);
    ++added;
  }
  ledger.SetFiredThrough(kShard, kM - 1);
  int64_t minute = kM;
  for (auto _ : state) {
    clock.Set(SlotMs(minute, kShard, cfg.tick_ms));
    if (firer.FireUpTo(kShard, minute) != ShardFirer::Outcome::kFired) state.SkipWithError("not fired");
    ++minute;
  }
  state.SetItemsProcessed(state.iterations() * jobs);
}
BENCHMARK(BM_FireShardMinute)->Arg(20)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace belfry::bench
