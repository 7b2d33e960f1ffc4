// BrokerErrorStreaks: how long each topic has been failing with broker errors while other
// triggers were delivered. A topic whose errors last past a bound (a topic without a leader for
// minutes) turns its broker errors into record errors (reason topic_unavailable), so that it no
// longer holds its shards back (docs/reliability.md, "Undeliverable triggers"). Time comes from
// the callers (the firers' Clock). Thread-safe: the firing workers share one.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "belfry/clock.h"

namespace belfry {

class BrokerErrorStreaks final {
 public:
  // `after_ms`: how long a topic's errors must last, with deliveries elsewhere, before they count
  // as record errors. `gap_ms`: a topic without an error for this long starts a new streak.
  explicit BrokerErrorStreaks(int64_t after_ms = 120'000, int64_t gap_ms = 60'000)
      : after_ms_(after_ms), gap_ms_(gap_ms) {}

  // A broker error on a trigger to `topic` at `now`. Returns true iff the topic has failed since
  // at least `after_ms` before `now` (with no gap of `gap_ms`), and some trigger was delivered
  // (OnDelivered) after its streak began: the topic, not the broker, is the problem.
  bool OnBrokerError(const std::string& topic, EpochMs now);
  // A firing had every trigger acknowledged at `now`.
  void OnDelivered(EpochMs now);

 private:
  struct Streak {
    EpochMs first = 0;
    EpochMs last = 0;
  };
  const int64_t after_ms_;
  const int64_t gap_ms_;
  std::mutex mu_;
  std::unordered_map<std::string, Streak> streaks_;  // guarded by mu_
  EpochMs last_delivered_ = 0;                        // guarded by mu_
};

}  // namespace belfry
