// ShardTicker: the metronome. At every slot (one shard every tick) it hands the slot to a
// TickDispatcher; every `scan_every_ticks` ticks it also asks for a catch-up scan. Waits only
// through the injected Clock, so a FakeClock runs hours of ticks in milliseconds.
#pragma once

#include <cstdint>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/stop_signal.h"
#include "core/layout_cell.h"

namespace belfry {

class TickDispatcher {
 public:
  virtual ~TickDispatcher() = default;
  virtual void DispatchOnTime(int32_t shard, int64_t minute) = 0;
  virtual void DispatchCatchUpScan() = 0;
};

class ShardTicker final {
 public:
  // With `layout`, the slots follow the layout it holds at each step, so the ticker switches to
  // a reshard's new shard count and tick at the cut-over minute; without, cfg's.
  ShardTicker(const SchedulerConfig& cfg, Clock& clock, TickDispatcher& dispatcher, int32_t scan_every_ticks = 2,
              const LayoutCell* layout = nullptr);
  ShardTicker(const ShardTicker&) = delete;
  ShardTicker& operator=(const ShardTicker&) = delete;

  // Runs on the calling thread until `stop` is requested. Slots that passed while the process
  // was not running, or more than a minute ago, are left to the catch-up scan.
  void Run(StopSignal& stop);

 private:
  const SchedulerConfig& cfg_;
  Clock& clock_;
  TickDispatcher& dispatcher_;
  const int32_t scan_every_ticks_;
  const LayoutCell* const layout_;
};

}  // namespace belfry
