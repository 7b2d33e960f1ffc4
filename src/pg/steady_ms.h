// Milliseconds of the steady clock: for the adapters' back-off windows, which must not move with
// the wall clock (a failed standby's or worker's retry_after).
#pragma once

#include <chrono>
#include <cstdint>

namespace belfry {

inline int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace belfry
