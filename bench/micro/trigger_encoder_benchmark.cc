// EncodeTriggerValue: the per-trigger work on the firing path (plus its header value).
#include <benchmark/benchmark.h>

#include <string>

#include "core/trigger_encoder.h"

namespace belfry::bench {
namespace {

// About 200 bytes of stored, minified details: the size the load test seeds.
constexpr char kDetails[] =
    R"({"shipmentId":4242424,"carrier":"ACME-FREIGHT","mode":"TL","reference":"PO-00029694",)"
    R"("pollUrl":"https://carrier.example.com/api/v2/shipments/4242424/status","attempt":0,"pad":"xxxxxxxx"})";

TriggerView TypicalTrigger() {
  TriggerView t;
  t.job_id = "shipment-4242424-poll";
  t.topic = "tracking.poll";
  t.key = "shipment-4242424";
  t.details_json = kDetails;
  t.interval_minutes = 15;
  t.scheduled_for_ms = 1'795'871'252'500;
  return t;
}

void BM_EncodeTriggerValue(benchmark::State& state) {
  const TriggerView t = TypicalTrigger();
  std::string out;
  for (auto _ : state) {
    EncodeTriggerValue(t, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(out.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeTriggerValue);

// Encoding with a fresh string each time, as a caller without a reusable buffer would.
void BM_EncodeTriggerValueFreshBuffer(benchmark::State& state) {
  const TriggerView t = TypicalTrigger();
  for (auto _ : state) {
    std::string out;
    EncodeTriggerValue(t, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeTriggerValueFreshBuffer);

void BM_ScheduledForHeader(benchmark::State& state) {
  EpochMs ms = 1'795'871'252'500;
  for (auto _ : state) {
    std::string header = ScheduledForHeader(ms);
    benchmark::DoNotOptimize(header);
    ms += 500;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ScheduledForHeader);

}  // namespace
}  // namespace belfry::bench
