// CommitQueue: a BatchConsumer's applied batches (commands or execution reports) whose records
// (DLQ, results) are still being acknowledged, in apply order. It decides which Kafka offsets may be committed: a batch's
// offsets only once the batch and every batch applied before it are settled (applied to the
// store AND all of their records acknowledged). Plain values; the adapter does the I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace belfry {

class CommitQueue final {
 public:
  using Partition = std::pair<std::string, int32_t>;  // (topic, partition)
  using Offsets = std::map<Partition, int64_t>;       // next offset to consume, per partition

  struct Committable {
    Offsets offsets;                // max next offset per partition over the popped batches
    std::vector<uint64_t> tickets;  // the popped batches, in apply order
  };

  // Adds a batch that has just been applied to the store. REQUIRES: batches are pushed in the
  // order they were applied. Returns the batch's ticket (increasing from 1).
  uint64_t Push(Offsets next_offsets);

  // Every DLQ/results record of batch `ticket` is acknowledged. Unknown tickets are ignored.
  void MarkSettled(uint64_t ticket);

  // Removes the leading run of settled batches and returns their merged offsets. A settled
  // batch behind an unsettled one stays: committing its offsets would also cover the earlier
  // batch's messages.
  Committable PopCommittable();

  // Drops every batch (their messages stay uncommitted and are re-delivered to the next owner).
  void Clear() { batches_.clear(); }

  size_t size() const { return batches_.size(); }
  // Settled batches that wait behind an unsettled one (PopCommittable leaves them).
  size_t settled_waiting() const;
  bool empty() const { return batches_.empty(); }

 private:
  struct Batch {
    uint64_t ticket = 0;
    Offsets next_offsets;
    bool settled = false;
  };
  std::deque<Batch> batches_;
  uint64_t next_ticket_ = 1;
};

// Whether the consumer should stop gathering and apply the `gathered` messages in hand (at most
// `max`). `waited_ms` have passed since the first of them arrived and `input_drained` says the
// last poll found nothing buffered locally. A batch is ready when full, when `max_wait_ms` is
// over, or as soon as the local queue is drained: waiting for more input while messages are in
// hand only adds latency, and under load the batch grows by itself while the previous one is
// being applied.
bool BatchIsReady(size_t gathered, size_t max, int64_t waited_ms, int64_t max_wait_ms, bool input_drained);

}  // namespace belfry
