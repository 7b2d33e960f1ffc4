// BulkOpRunner: walks the recorded bulk operations (docs/bulk-operations.md) one bounded step at
// a time, and publishes each finished operation's outcome record. Every node runs one; the store
// hands each step to one node (BulkOpStore::RunBulkStep), so nodes share the work.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "belfry/bulk_op_store.h"
#include "belfry/clock.h"
#include "belfry/status.h"
#include "belfry/stop_signal.h"

namespace belfry {

struct BulkOpRunnerOptions {
  int32_t step_jobs = 1000;     // jobs a step changes at most (commands.bulk_step_jobs)
  int64_t step_pause_ms = 100;  // rest after a step (commands.bulk_step_pause)
  int64_t idle_poll_ms = 1000;  // how often an idle runner looks for a new operation
};

// Publishes one outcome record (key = the operation's id) to the results topic and waits for the
// broker's acknowledgement; Ok iff acknowledged.
using OutcomePublisher = std::function<Status(const std::string& key, const std::string& value)>;

class BulkOpRunner final {
 public:
  BulkOpRunner(BulkOpStore& store, Clock& clock, OutcomePublisher publish, BulkOpRunnerOptions options = {});

  // What one round did.
  struct Round {
    bool stepped = false;     // a step ran (another may follow at once)
    int64_t published = 0;    // outcome records published
  };
  // One round: a step of the oldest unfinished operation, if any, then the outcome records of
  // finished operations not yet published (at least once: a record is marked published only
  // after the broker acknowledged it).
  StatusOr<Round> RunOnce();

  // Rounds until `stop`: after a step it rests step_pause_ms, when idle idle_poll_ms, after a
  // failure idle_poll_ms too.
  void Run(StopSignal& stop);

 private:
  BulkOpStore& store_;
  Clock& clock_;
  OutcomePublisher publish_;
  BulkOpRunnerOptions options_;
};

}  // namespace belfry
