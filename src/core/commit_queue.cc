#include "core/commit_queue.h"

#include <algorithm>

namespace belfry {

uint64_t CommitQueue::Push(Offsets next_offsets) {
  const uint64_t ticket = next_ticket_++;
  batches_.push_back(Batch{ticket, std::move(next_offsets), false});
  return ticket;
}

void CommitQueue::MarkSettled(uint64_t ticket) {
  for (Batch& b : batches_) {
    if (b.ticket == ticket) {
      b.settled = true;
      return;
    }
  }
}

CommitQueue::Committable CommitQueue::PopCommittable() {
  Committable out;
  while (!batches_.empty() && batches_.front().settled) {
    for (const auto& [partition, offset] : batches_.front().next_offsets) {
      auto [it, inserted] = out.offsets.try_emplace(partition, offset);
      if (!inserted) it->second = std::max(it->second, offset);
    }
    out.tickets.push_back(batches_.front().ticket);
    batches_.pop_front();
  }
  return out;
}

size_t CommitQueue::settled_waiting() const {
  return static_cast<size_t>(std::count_if(batches_.begin(), batches_.end(), [](const Batch& b) { return b.settled; }));
}

bool BatchIsReady(size_t gathered, size_t max, int64_t waited_ms, int64_t max_wait_ms, bool input_drained) {
  if (gathered == 0) return false;
  if (gathered >= max) return true;
  return input_drained || waited_ms >= max_wait_ms;
}

}  // namespace belfry
