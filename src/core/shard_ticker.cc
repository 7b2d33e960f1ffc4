#include "core/shard_ticker.h"

#include "core/slot_math.h"

namespace belfry {

ShardTicker::ShardTicker(const SchedulerConfig& cfg, Clock& clock, TickDispatcher& dispatcher,
                         int32_t scan_every_ticks)
    : cfg_(cfg), clock_(clock), dispatcher_(dispatcher), scan_every_ticks_(scan_every_ticks) {}

void ShardTicker::Run(StopSignal& stop) {
  dispatcher_.DispatchCatchUpScan();
  SlotRef next = FirstSlotAtOrAfter(clock_.NowMs(), cfg_.tick_ms);
  int64_t ticks = 0;
  while (!stop.requested()) {
    const EpochMs slot = SlotMs(next.minute, next.shard, cfg_.tick_ms);
    if (!clock_.SleepUntil(slot, stop)) return;
    const EpochMs now = clock_.NowMs();
    if (now - slot > kMsPerMinute) {
      // Woke far too late (suspended, or the clock jumped): resume from the present and let
      // the catch-up scan handle what was missed.
      next = FirstSlotAtOrAfter(now, cfg_.tick_ms);
      dispatcher_.DispatchCatchUpScan();
      continue;
    }
    dispatcher_.DispatchOnTime(next.shard, next.minute);
    if (++next.shard == cfg_.shard_count) {
      next.shard = 0;
      ++next.minute;
    }
    if (++ticks % scan_every_ticks_ == 0) dispatcher_.DispatchCatchUpScan();
  }
}

}  // namespace belfry
