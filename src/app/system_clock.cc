#include "app/system_clock.h"

#include <algorithm>
#include <chrono>

#include "belfry/stop_signal.h"

namespace belfry {

EpochMs SystemClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())  // NO_CHECK_CLOCK: the real clock
      .count();
}

bool SystemClock::SleepUntil(EpochMs deadline, StopSignal& stop) {
  // Sleep in short steps re-reading the wall clock, so a clock step (NTP) is noticed promptly.
  while (!stop.requested()) {
    const EpochMs now = NowMs();
    if (now >= deadline) return true;
    const int64_t step = std::min<int64_t>(deadline - now, 200);
    if (!stop.WaitFor(std::chrono::milliseconds(step))) return false;
  }
  return false;
}

}  // namespace belfry
