#include "core/unrecorded_dead_letters.h"

namespace belfry {

bool UnrecordedDeadLetters::Contains(const std::string& job_id, EpochMs slot_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count({job_id, slot_ms}) > 0;
}

void UnrecordedDeadLetters::Add(const std::string& job_id, EpochMs slot_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() >= max_entries_) entries_.clear();
  entries_.emplace(job_id, slot_ms);
}

void UnrecordedDeadLetters::Remove(const std::string& job_id, EpochMs slot_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase({job_id, slot_ms});
}

}  // namespace belfry
