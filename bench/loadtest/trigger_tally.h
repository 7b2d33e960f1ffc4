// TriggerTally: judges consumed trigger messages against TriggerExpectations and counts the
// verdicts, for `verify` and `burst`. Trigger messages are read through their headers
// (belfry-job-id, belfry-scheduled-for), never by parsing the JSON value.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadtest/latency_histogram.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/progress_meter.h"
#include "loadtest/trigger_expectations.h"

namespace belfry::loadtest {

// The header names a LiveTopicReader of triggers must extract, in this order.
// A trigger with belfry-manual (docs/manual-fires.md) was asked for by a trigger or backfill
// command, not by the schedule: it is counted apart and not judged.
inline const std::vector<std::string> kTriggerHeaders = {"belfry-job-id", "belfry-scheduled-for", "belfry-manual"};

class ChurnExpectations;

// The belfry-scheduled-for header of a record read with kTriggerHeaders; false if it is absent
// or not a number (or the job id header is absent).
bool ScheduledForOf(const LiveRecord& record, EpochMs* scheduled_for);

class TriggerTally final {
 public:
  // `arrivals` (optional) is incremented for every first arrival of an expected trigger.
  TriggerTally(TriggerExpectations* expectations, ProgressCounter* arrivals)
      : expectations_(expectations), arrivals_(arrivals) {}
  // Judges through `churn` (verify --churn-rate), which falls back to its TriggerExpectations.
  TriggerTally(ChurnExpectations* churn, ProgressCounter* arrivals) : churn_(churn), arrivals_(arrivals) {}

  // Judges one message read with kTriggerHeaders. Not thread-safe (the counters may be read
  // from other threads).
  TriggerExpectations::Verdict Add(const LiveRecord& record);

  int64_t received() const { return received_.load(std::memory_order_relaxed); }
  int64_t duplicates() const { return duplicates_.load(std::memory_order_relaxed); }
  int64_t unexpected() const {
    return unknown_job_.load(std::memory_order_relaxed) + not_due_.load(std::memory_order_relaxed);
  }
  int64_t malformed() const { return malformed_.load(std::memory_order_relaxed); }
  int64_t manual() const { return manual_.load(std::memory_order_relaxed); }
  int64_t value_bytes() const { return value_bytes_; }
  // Lateness (receive time - scheduledFor) of first arrivals of expected triggers.
  const LatencyHistogram& lateness() const { return lateness_; }
  EpochMs first_arrival_ms() const { return first_arrival_ms_; }
  EpochMs last_arrival_ms() const { return last_arrival_ms_; }

  // {"received_messages","duplicates","unexpected":{...},"outside_window","malformed","manual"}.
  nlohmann::ordered_json Json() const;
  // Writes the run's delivery verdict into `j`, the same way in every mode: "expected",
  // "received", "missing", "missing_examples" (when there are any), then Json()'s fields.
  void WriteDelivery(int64_t expected, int64_t received, int64_t missing,
                     const std::vector<TriggerExpectations::MissingTrigger>& examples,
                     nlohmann::ordered_json* j) const;
  // "dup 0 | unexpected 0" for the progress line.
  std::string ProgressText() const;

 private:
  TriggerExpectations* const expectations_ = nullptr;
  ChurnExpectations* const churn_ = nullptr;
  ProgressCounter* const arrivals_;
  std::atomic<int64_t> received_{0};
  std::atomic<int64_t> duplicates_{0};
  std::atomic<int64_t> unknown_job_{0};
  std::atomic<int64_t> not_due_{0};
  std::atomic<int64_t> outside_window_{0};
  std::atomic<int64_t> malformed_{0};
  std::atomic<int64_t> manual_{0};
  int64_t value_bytes_ = 0;
  LatencyHistogram lateness_;
  EpochMs first_arrival_ms_ = 0;
  EpochMs last_arrival_ms_ = 0;
  std::string first_unexpected_;
};

}  // namespace belfry::loadtest
