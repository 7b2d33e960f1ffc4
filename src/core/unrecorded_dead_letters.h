// UnrecordedDeadLetters: the refused (job, slot)s whose trigger dead letter the broker has
// acknowledged but whose last delivery error is not written yet. A retry of the shard-minute
// refuses the trigger again, on any firing worker of the node; TriggerDeadLetterer looks here so
// that it only writes, instead of sending a second dead letter (docs/reliability.md). In memory,
// bounded. Thread-safe: a node's dead letterers share one.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "belfry/clock.h"

namespace belfry {

class UnrecordedDeadLetters final {
 public:
  explicit UnrecordedDeadLetters(size_t max_entries = 10'000) : max_entries_(max_entries) {}
  UnrecordedDeadLetters(const UnrecordedDeadLetters&) = delete;
  UnrecordedDeadLetters& operator=(const UnrecordedDeadLetters&) = delete;

  bool Contains(const std::string& job_id, EpochMs slot_ms) const;
  // Past the bound, forgets every entry first (a retry then sends a second letter, as after a
  // takeover: the letters are at-least-once).
  void Add(const std::string& job_id, EpochMs slot_ms);
  void Remove(const std::string& job_id, EpochMs slot_ms);

 private:
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::set<std::pair<std::string, EpochMs>> entries_;  // guarded by mu_
};

}  // namespace belfry
