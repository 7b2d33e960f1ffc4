// ChurnExpectations: `verify --churn-rate`'s expectations for the jobs its commands change.
// A job joins when the harness sends its first command: a loaded job is taken over from
// TriggerExpectations (Release: its loaded schedule becomes version 0 and its arrivals so far
// come along), a created one starts as absent. Each command appends a version
// (ApplyChurnOp); its applied outcome fixes the version's applied time. Arrivals are judged by
// ExpectSlot (schedule_history.h) when they come in, with the versions sent before them; the
// missing ones when the run is over, with every version. Every other job is judged by
// TriggerExpectations as before. Not thread-safe: one thread sends, reads and judges.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loadtest/schedule_history.h"
#include "loadtest/trigger_expectations.h"

namespace belfry::loadtest {

class ChurnExpectations final {
 public:
  using Verdict = TriggerExpectations::Verdict;
  // Identifies one version of one tracked job.
  using VersionHandle = uint64_t;

  // REQUIRES: base->SetWindow() was called; `base` outlives this.
  ChurnExpectations(TriggerExpectations* base, int64_t margin_ms);

  // The schedule job `id` will have once every command sent so far is applied: the last
  // version of a tracked job, else its loaded schedule, else absent.
  IntervalSchedule Latest(std::string_view id) const;

  // Records a command for `id` sent at `sent_ms` (call it before producing the command). The
  // new version is ApplyChurnOp(Latest(id), ...). REQUIRES: a loaded `id` is an interval job
  // without dates (TriggerExpectations::IntervalJobOf).
  VersionHandle AddCommand(std::string_view id, ChurnOp op, int32_t interval, int32_t offset,
                           EpochMs sent_ms);
  // The command's outcome arrived at `received_ms`.
  void SetApplied(VersionHandle handle, EpochMs received_ms);
  // The command was rejected: its version keeps the previous schedule (a failed run anyway).
  void SetRejected(VersionHandle handle);
  EpochMs SentMs(VersionHandle handle) const;

  // Judges one arrival, here for a tracked job, else by TriggerExpectations::Record.
  Verdict Record(std::string_view job_id, EpochMs scheduled_for_ms, EpochMs received_ms);

  // After the run: the tracked jobs' slots in the window, by ExpectSlot over all versions.
  struct Totals {
    int64_t required = 0;        // kRequired slots
    int64_t required_seen = 0;   // of which arrived
    int64_t allowed_seen = 0;    // kAllowed slots that arrived
    int64_t allowed_absent = 0;  // kAllowed slots that did not
    int64_t missing = 0;         // kRequired slots that did not arrive
    // Arrivals accepted when they came but kForbidden by the end (a version's outcome was read
    // more than the margin after it arrived): counted as unexpected.
    int64_t forbidden_seen = 0;
  };
  // Calls on_missing(id, slot_ms) for every missing slot and on_forbidden for every
  // forbidden_seen one.
  Totals Finish(const std::function<void(std::string_view, EpochMs)>& on_missing,
                const std::function<void(std::string_view, EpochMs)>& on_forbidden) const;

  size_t tracked_jobs() const { return jobs_.size(); }
  int64_t versions() const { return versions_; }
  int64_t pending_outcomes() const { return pending_; }
  int64_t margin_ms() const { return margin_ms_; }

 private:
  struct TrackedJob {
    std::string id;
    int32_t shard = 0;
    std::vector<ScheduleVersion> history;
    std::vector<uint64_t> seen;  // bit k: the slot of minute first_minute + k arrived
  };
  // Index of `id` in jobs_, adopting it first if needed.
  uint32_t Track(std::string_view id);
  bool SeenBit(const TrackedJob& job, int64_t k) const { return (job.seen[k / 64] >> (k % 64)) & 1; }

  TriggerExpectations* const base_;
  const int64_t margin_ms_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<TrackedJob> jobs_;
  int64_t versions_ = 0;
  int64_t pending_ = 0;
};

}  // namespace belfry::loadtest
