// PrepareCommandBatch: one poll batch parsed, validated and reduced to one action per job.
#include <benchmark/benchmark.h>

#include "core/command_batch.h"
#include "micro/micro_fixtures.h"

namespace belfry::bench {
namespace {

void BM_PrepareCommandBatch(benchmark::State& state) {
  const CommandRules& rules = DefaultCommandRules();
  const std::vector<RawCommand> batch = MixedCommandBatch(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    PreparedCommandBatch prepared = PrepareCommandBatch(batch, rules);
    if (!prepared.rejections.empty()) state.SkipWithError("the fixture batch has rejected commands");
    benchmark::DoNotOptimize(prepared);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_PrepareCommandBatch)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_EncodeCommandOutcome(benchmark::State& state) {
  CommandOutcome outcome;
  outcome.id = "shipment-42-poll";
  outcome.op = "upsert";
  outcome.applied = true;
  outcome.partition = 3;
  outcome.offset = 123456789;
  for (auto _ : state) {
    std::string value = EncodeCommandOutcome(outcome);
    benchmark::DoNotOptimize(value);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeCommandOutcome);

}  // namespace
}  // namespace belfry::bench
