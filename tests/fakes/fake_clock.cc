#include "fakes/fake_clock.h"

namespace belfry {

bool FakeClock::SleepUntil(EpochMs deadline, StopSignal& stop) {
  if (stop.requested()) return false;
  if (deadline > end_.load()) {
    stop.Request();
    return false;
  }
  EpochMs cur = now_.load();
  while (deadline > cur && !now_.compare_exchange_weak(cur, deadline)) {
  }
  return true;
}

}  // namespace belfry
