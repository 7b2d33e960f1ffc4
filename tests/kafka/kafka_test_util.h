// Shared helpers for the Kafka integration tests: the broker address (BELFRY_KAFKA_BROKERS is
// required), unique names, polling waits, a producer of plain messages, and a CommandStore and
// an ExecutionStore that record and can fail applies.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "belfry/config.h"
#include "belfry/execution.h"
#include "belfry/command_store.h"
#include "fakes/fake_job_store.h"
#include "kafka/topic_tail.h"

namespace belfry::testing {

// A KafkaConfig pointing at $BELFRY_KAFKA_BROKERS with unique topic and group names.
KafkaConfig TestKafkaConfig();

// "<prefix>-<pid>-<random>-<counter>": unique per call and per test run.
std::string UniqueName(const std::string& prefix);

// Polls `pred` every 20 ms until it holds or `timeout` passes; returns its last value.
bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// The committed offsets of `group` for partitions 0..partitions-1 of `topic` (negative: none).
std::map<int32_t, int64_t> CommittedOffsets(const std::string& group, const std::string& topic,
                                            int32_t partitions);

// `topic`'s records from its beginning, until `want` have arrived (or 60 s), then whatever follows
// within 500 ms. A failure to open the tail fails the calling test.
std::vector<TailRecord> ReadTopicFromStart(const KafkaConfig& config, const std::string& topic, size_t want);

// Produces (key, value) messages to `topic` (to `partition`, or partitioned by key when nullopt)
// and waits until the broker has acknowledged all.
Status ProduceMessages(const std::string& topic,
                       const std::vector<std::pair<std::string, std::string>>& messages,
                       std::optional<int32_t> partition = std::nullopt);

// A CommandStore over a FakeJobStore that records every ApplyActions call and can fail the next n
// of them. Manual fires and bulk operations go to the FakeJobStore as they are.
class RecordingCommandStore final : public CommandStore {
 public:
  Status ApplyActions(const std::vector<JobAction>& actions) override;
  StatusOr<std::vector<ManualFireResult>> ApplyManualFires(const std::vector<ManualFire>& fires) override {
    return inner_.ApplyManualFires(fires);
  }
  StatusOr<std::vector<Status>> AcceptBulkOps(const std::vector<BulkOp>& ops) override {
    return inner_.AcceptBulkOps(ops);
  }

  // The next `n` ApplyActions calls return `status` without applying anything.
  void FailNextApplies(int n, Status status);
  // Called (on the consumer's thread) at the start of every ApplyActions, with the 1-based call number.
  void SetOnApply(std::function<void(int)> fn);

  int apply_calls() const;
  // The action lists of the successful calls, in order.
  std::vector<std::vector<JobAction>> applied() const;
  std::map<std::string, FakeJobStore::Row> rows() const { return inner_.rows(); }

 private:
  FakeJobStore inner_;
  mutable std::mutex mu_;
  int calls_ = 0;
  int fail_next_ = 0;
  Status fail_status_;
  std::function<void(int)> on_apply_;
  std::vector<std::vector<JobAction>> applied_;
};

// An ExecutionStore that counts how often each report (job id, scheduledFor, attempt, status) was
// stored by a successful ApplyReports, and fails every call while SetFailing(true). Thread-safe.
class RecordingExecutionStore final : public ExecutionStore {
 public:
  StatusOr<ExecutionApplyResult> ApplyReports(const std::vector<ExecutionReport>& reports) override;
  StatusOr<ExecutionPage> ListExecutions(const std::string&, int32_t, const std::string&) override {
    return ExecutionPage{};
  }
  StatusOr<std::optional<JobStats>> GetJobStats(const std::string&) override {
    return std::optional<JobStats>();
  }

  // While true, ApplyReports returns Retryable and stores nothing.
  void SetFailing(bool failing);
  // The next `n` ApplyReports calls throw std::runtime_error (as a store's bug or std::bad_alloc
  // would) and store nothing.
  void ThrowNext(int n);
  int apply_calls() const;
  // "<jobId>/<scheduledFor ms>/<attempt>/<status>" -> times stored.
  std::map<std::string, int> stored() const;

 private:
  mutable std::mutex mu_;
  bool failing_ = false;
  int throw_next_ = 0;
  int calls_ = 0;
  std::map<std::string, int> stored_;
};

}  // namespace belfry::testing
