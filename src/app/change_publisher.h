// ChangePublisher: publishes the audit trail's change events (docs/audit-trail.md) to the changes
// topic, keyed by job id, in change_id order, and marks them published once the broker has
// acknowledged them (at least once). Every node runs one; the store lets one publish at a time
// (JobChangeStore::PublishChanges), which keeps each job's events in order on its partition.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "belfry/clock.h"
#include "belfry/job_change_store.h"
#include "belfry/status.h"
#include "belfry/stop_signal.h"

namespace belfry {

struct ChangePublisherOptions {
  int32_t batch = 1000;         // events per publish round
  int64_t idle_poll_ms = 500;   // how often an idle publisher looks for new changes
  // After each round that found changes: how many it published, and how many it handed to a
  // publish that failed (they come again in a later round).
  std::function<void(int64_t published, int64_t failed)> on_round;
};

// Produces the (key, value) records in order and waits for the broker's acknowledgement of all;
// Ok iff every one was acknowledged (CommandPublisher::PublishAll).
using RecordBatchPublisher = std::function<Status(const std::vector<std::pair<std::string, std::string>>&)>;

class ChangePublisher final {
 public:
  ChangePublisher(JobChangeStore& store, Clock& clock, RecordBatchPublisher publish, ChangePublisherOptions options = {});

  // One round: publishes up to options.batch of the oldest unpublished changes. Returns how many
  // it marked published (0 when none waits, or while another node publishes).
  StatusOr<int64_t> RunOnce();

  // Rounds until `stop`; a full round is followed at once by the next, any other by a rest of
  // idle_poll_ms.
  void Run(StopSignal& stop);

 private:
  JobChangeStore& store_;
  Clock& clock_;
  RecordBatchPublisher publish_;
  ChangePublisherOptions options_;
};

}  // namespace belfry
