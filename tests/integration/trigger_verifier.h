// TriggerVerifier: consumes trigger topics on a background thread and checks, for a set of jobs
// and a window of slots, that every due (job, slot) arrived: missing, duplicated and unexpected
// triggers, and lateness (the Kafka record's create time minus belfry-scheduled-for).
//
// The consumer assigns itself every partition of the topics (no consumer group), so a broker
// restart costs it only the reconnection, not a group rejoin: its receive times stay a fair
// measure of when a consumer could see a trigger. Records are also de-duplicated by (topic,
// partition, offset), so a re-read never counts; a duplicate is a second Kafka record for the
// same (job id, scheduledFor).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "belfry/clock.h"
#include "belfry/stop_signal.h"

namespace RdKafka {
class KafkaConsumer;
class Message;
}  // namespace RdKafka

namespace belfry {

// A job the test created: its schedule decides which slots are due.
struct ExpectedJob {
  std::string id;
  int32_t shard = 0;
  int32_t interval_minutes = 1;
  int32_t offset_minutes = 0;
};

// A fault: duplicates of shard-minutes whose slot lies in [from_ms, to_ms] are explained by it.
struct FaultWindow {
  std::string name;
  EpochMs from_ms = 0;
  EpochMs to_ms = 0;
};

struct LatenessStats {
  int64_t count = 0;
  int64_t p50_ms = 0;
  int64_t p99_ms = 0;
  int64_t max_ms = 0;
};

struct VerifyReport {
  int64_t expected = 0;    // due (job, slot) pairs in the window
  int64_t received = 0;    // distinct Kafka records for those pairs (copies included)
  int64_t missing = 0;     // due pairs with no record
  int64_t duplicates = 0;  // extra records of due pairs
  int64_t duplicate_shard_minutes = 0;
  int64_t unexplained_duplicates = 0;  // extra records in shard-minutes no FaultWindow covers
  int64_t unexpected = 0;              // records in the window for a pair that is not due (or an unknown job)
  // Per due pair that arrived, the earliest copy's Kafka timestamp (the producer's create time:
  // when belfry produced it) minus its slot.
  LatenessStats lateness;
  // Per due pair that arrived, when this verifier first received a copy, minus its slot: when a
  // consumer could act on it. Differs from `lateness` when a produced trigger reached the broker
  // late (a stalled node resuming, librdkafka retrying through a broker outage), and includes
  // this consumer's own fetch delay (milliseconds normally; a broker outage also delays it).
  LatenessStats visible;
  std::vector<std::string> missing_examples;     // up to 10, "id@scheduledFor"
  std::vector<std::string> duplicate_examples;   // up to 10
  std::vector<std::string> unexpected_examples;  // up to 10

  // One line for the log: "[verify] <scenario>: expected=... missing=... ...".
  std::string Summary(const std::string& scenario) const;
  // RecordProperty(<prefix>_expected, ...) and so on, so the figures land in the test XML.
  void Record(const std::string& prefix) const;
};

// One arrival of a trigger (the earliest copy first when sorted).
struct Arrival {
  EpochMs scheduled_for = 0;
  EpochMs timestamp_ms = 0;  // the producer's create time
  EpochMs received_ms = 0;   // when this verifier consumed it (wall clock)
};

class TriggerVerifier final {
 public:
  // Starts consuming `topics` from the beginning.
  TriggerVerifier(const std::string& brokers, std::vector<std::string> topics);
  ~TriggerVerifier();
  TriggerVerifier(const TriggerVerifier&) = delete;
  TriggerVerifier& operator=(const TriggerVerifier&) = delete;

  // Distinct records seen so far (after de-duplication by position).
  size_t size() const;
  // Records without a belfry-job-id / belfry-scheduled-for header.
  size_t malformed() const;
  // Re-reads of a position already seen (consumer restarts), for the log.
  size_t rereads() const;

  // Checks slots in [from_ms, to_ms) for `jobs` (shard_count 120, tick 500 ms).
  VerifyReport Check(const std::vector<ExpectedJob>& jobs, EpochMs from_ms, EpochMs to_ms,
                     const std::vector<FaultWindow>& faults = {}) const;
  // Polls Check() until nothing is missing or `timeout_ms` passes; returns the last report.
  VerifyReport WaitComplete(const std::vector<ExpectedJob>& jobs, EpochMs from_ms, EpochMs to_ms,
                            int64_t timeout_ms, const std::vector<FaultWindow>& faults = {}) const;

  // Every arrival per job id (all copies), sorted by scheduled_for then timestamp.
  std::map<std::string, std::vector<Arrival>> ArrivalsByJob() const;

 private:
  struct Rec {
    uint32_t job = 0;
    EpochMs scheduled_for = 0;
    EpochMs timestamp_ms = 0;
    EpochMs received_ms = 0;
  };
  void Run();
  // Assigns the partitions of the topics not assigned yet, once they exist.
  void AssignNewTopics();
  void OnMessage(RdKafka::Message& m);

  std::vector<std::string> unassigned_topics_;  // consumer thread only
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  StopSignal stop_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint32_t> job_index_;  // guarded by mu_
  std::vector<std::string> job_names_;                   // guarded by mu_
  std::vector<Rec> records_;                             // guarded by mu_
  std::unordered_set<std::string> positions_;            // guarded by mu_ ("topic/p/o")
  size_t malformed_ = 0;                                 // guarded by mu_
  size_t rereads_ = 0;                                   // guarded by mu_
  std::thread thread_;
};

// Percentiles of a list of values (sorted in place).
LatenessStats ComputeLateness(std::vector<int64_t>* values);

}  // namespace belfry
