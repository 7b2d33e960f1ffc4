// FakeClock: time stands still until a sleeper advances it. SleepUntil jumps straight to the
// deadline, so a loop that sleeps between ticks simulates hours in milliseconds.
#pragma once

#include <atomic>

#include "belfry/clock.h"
#include "belfry/stop_signal.h"

namespace belfry {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(EpochMs start) : now_(start) {}

  EpochMs NowMs() const override { return now_.load(); }
  // Advances to `deadline` (never backwards). Once the time reaches the configured end, it
  // requests `stop` instead and returns false.
  bool SleepUntil(EpochMs deadline, StopSignal& stop) override;

  void Advance(int64_t ms) { now_ += ms; }
  void Set(EpochMs t) { now_ = t; }
  // SleepUntil requests stop instead of passing this instant.
  void StopAt(EpochMs end) { end_ = end; }

 private:
  std::atomic<EpochMs> now_;
  std::atomic<EpochMs> end_{INT64_MAX};
};

}  // namespace belfry
