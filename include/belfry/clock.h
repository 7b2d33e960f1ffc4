// Clock: the only source of time and waiting for belfry's core. Production code uses
// SystemClock (src/app); tests use FakeClock (tests/fakes), which makes waiting instant.
#pragma once

#include <cstdint>

namespace belfry {

class StopSignal;

// Milliseconds since the Unix epoch, UTC.
using EpochMs = int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  // Current wall-clock time.
  virtual EpochMs NowMs() const = 0;
  // Blocks until NowMs() >= deadline or `stop` is requested, whichever is first.
  // Returns false iff stop was requested. Thread-safe.
  virtual bool SleepUntil(EpochMs deadline, StopSignal& stop) = 0;
};

}  // namespace belfry
