#include "core/shard_ticker.h"

#include "core/slot_math.h"

namespace belfry {

ShardTicker::ShardTicker(const SchedulerConfig& cfg, Clock& clock, TickDispatcher& dispatcher,
                         int32_t scan_every_ticks, const LayoutCell* layout)
    : cfg_(cfg), clock_(clock), dispatcher_(dispatcher), scan_every_ticks_(scan_every_ticks), layout_(layout) {}

void ShardTicker::Run(StopSignal& stop) {
  auto current = [this] { return layout_ != nullptr ? layout_->Get() : ShardLayout{cfg_.shard_count}; };
  dispatcher_.DispatchCatchUpScan();
  SlotRef next = FirstLayoutSlotAtOrAfter(current(), clock_.NowMs());
  int64_t ticks = 0;
  while (!stop.requested()) {
    ShardLayout layout = current();
    const EpochMs slot = LayoutSlotMs(layout, next.minute, next.shard);
    if (!clock_.SleepUntil(slot, stop)) return;
    const EpochMs now = clock_.NowMs();
    if (now - slot > kMsPerMinute) {
      // Woke far too late (suspended, or the clock jumped): resume from the present and let
      // the catch-up scan handle what was missed.
      next = FirstLayoutSlotAtOrAfter(current(), now);
      dispatcher_.DispatchCatchUpScan();
      continue;
    }
    dispatcher_.DispatchOnTime(next.shard, next.minute);
    // A layout learnt while sleeping applies from the next slot on.
    layout = current();
    next = NextLayoutSlot(layout, next);
    if (++ticks % scan_every_ticks_ == 0) dispatcher_.DispatchCatchUpScan();
  }
}

}  // namespace belfry
