// ParseCommand: parsing and validating one command from the commands topic.
#include <benchmark/benchmark.h>

#include "core/command_parser.h"
#include "micro/micro_fixtures.h"

namespace belfry::bench {
namespace {

void BM_ParseCommandTypical(benchmark::State& state) {
  const CommandRules& rules = DefaultCommandRules();
  const RawCommand raw = TypicalRawCommand(42, 1234);
  for (auto _ : state) {
    StatusOr<Command> parsed = ParseCommand(raw, rules);
    if (!parsed.ok()) state.SkipWithError(parsed.status().ToString().c_str());
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(raw.value->size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ParseCommandTypical);

void BM_ParseCommandLargeDetails(benchmark::State& state) {
  const CommandRules& rules = DefaultCommandRules();
  RawCommand raw = TypicalRawCommand(42, 1234);
  raw.value = LargeDetailsCommandValue(42, static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    StatusOr<Command> parsed = ParseCommand(raw, rules);
    if (!parsed.ok()) state.SkipWithError(parsed.status().ToString().c_str());
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(raw.value->size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ParseCommandLargeDetails)->Arg(4096);

// The rejection path: a command with an unsupported interval must be cheap to refuse too.
void BM_ParseCommandRejected(benchmark::State& state) {
  const CommandRules& rules = DefaultCommandRules();
  RawCommand raw = TypicalRawCommand(42, 1234);
  raw.value = R"({"id": "shipment-42-poll", "intervalMinutes": 7, "topic": "tracking.poll"})";
  for (auto _ : state) {
    StatusOr<Command> parsed = ParseCommand(raw, rules);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ParseCommandRejected);

}  // namespace
}  // namespace belfry::bench
