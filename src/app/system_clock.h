// SystemClock: the real Clock. The one place belfry reads wall-clock time.
#pragma once

#include "belfry/clock.h"

namespace belfry {

class SystemClock final : public Clock {
 public:
  EpochMs NowMs() const override;
  bool SleepUntil(EpochMs deadline, StopSignal& stop) override;
};

}  // namespace belfry
