// ChurnDriver: the commands of `verify --churn-rate N/min`. During the window it sends N
// commands a minute (evenly paced) through the real commands topic, on the harness's own jobs:
// creates of new ids, updates that move a job's offset or change its interval (and offset),
// pauses, resumes and deletes, in the proportions of --churn-mix. Every command is entered in
// ChurnExpectations before it is produced; its applied outcome, matched by (partition, offset)
// as `crud` matches them, fixes the version's applied time. Single-threaded: Pump() from the
// verify loop (the producer's delivery reports are handed over through a queue).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "loadtest/churn_expectations.h"
#include "loadtest/command_outcome.h"
#include "loadtest/job_command_factory.h"
#include "loadtest/latency_histogram.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/loadtest_producer.h"
#include "loadtest/window_report.h"

namespace belfry::loadtest {

// The weights of churn's operations.
struct ChurnMix {
  double create = 20;
  double update_offset = 20;
  double update_interval = 20;
  double pause = 10;
  double resume = 10;
  double remove = 20;

  // Parses "create:W,update-offset:W,update-interval:W,pause:W,resume:W,delete:W" (any subset;
  // the ones left out weigh 0). Throws std::invalid_argument naming the bad entry.
  static ChurnMix Parse(const std::string& text);
  std::string ToString() const;
};

struct ChurnOptions {
  double per_minute = 0;  // 0: no churn
  std::string mix = "create:20,update-offset:20,update-interval:20,pause:10,resume:10,delete:20";
  std::string id_prefix = "lt-";                // the seeded jobs it may change (seed --id-prefix)
  std::string intervals = kDefaultIntervalMix;  // intervals of created and re-intervalled jobs
  int32_t topics = 0;  // trigger topics <prefix>0..K-1 of created jobs; 0: as many as were loaded
  int32_t partitions = 4;
  size_t details_bytes = 200;
  uint64_t seed = 1;
};

class ChurnDriver final {
 public:
  // Collects the loaded interval jobs without dates whose ids are `id_prefix` + number.
  // Throws on setup errors.
  // `loaded` is the job table as verify loaded it (verify's --topics-prefix is `topic_prefix`).
  ChurnDriver(const CommonOptions& common, const ChurnOptions& options, const std::string& topic_prefix,
              const TriggerExpectations& loaded, ChurnExpectations* churn, WindowReport* report,
              EpochMs start_ms, EpochMs stop_ms);
  ~ChurnDriver();
  ChurnDriver(const ChurnDriver&) = delete;
  ChurnDriver& operator=(const ChurnDriver&) = delete;

  // Reads the outcomes that arrived and sends every command due by `now` (none after stop_ms).
  void Pump(EpochMs now);
  // After the window: reads outcomes until every sent command has one or `timeout_ms` passes.
  void Settle(int64_t timeout_ms);

  int64_t rejected() const { return rejected_; }
  int64_t failed_deliveries() const;
  // {"rate_per_min", "mix", "sent": {...by op}, "applied", "rejected", ...}.
  nlohmann::ordered_json Json() const;

 private:
  struct PendingCommand {
    ChurnExpectations::VersionHandle version = 0;
  };
  // A job churn may act on: a loaded job (its number under id_prefix) or a created one.
  struct Target {
    uint64_t n = 0;
    bool created = false;
  };
  void SendOne(EpochMs now);
  void ReadOutcomes(int64_t wait_ms);
  void MatchDeliveries();
  void OnOutcome(uint64_t position, bool applied, EpochMs received_ms, std::string_view record);
  void Resolve(ChurnExpectations::VersionHandle version, bool applied, EpochMs received_ms,
               std::string_view record);
  const JobCommandFactory& FactoryOf(const Target& t) const { return t.created ? created_ : loaded_; }
  Target TakeRandom(std::vector<Target>* pool);

  const ChurnOptions options_;
  const ChurnMix mix_;
  const IntervalMix intervals_;
  const std::string commands_topic_;
  ChurnExpectations* const churn_;
  WindowReport* const report_;
  const EpochMs start_ms_;
  const EpochMs stop_ms_;
  JobCommandFactory loaded_;
  JobCommandFactory created_;
  std::mt19937_64 rng_;
  std::vector<Target> live_;    // exists, not paused
  std::vector<Target> paused_;  // exists, paused
  uint64_t next_created_ = 0;
  int64_t loaded_targets_ = 0;
  int64_t sent_ = 0;
  int64_t sent_by_op_[6] = {0, 0, 0, 0, 0, 0};

  std::unique_ptr<LiveTopicReader> results_;
  CommandOutcomeParser parser_;
  std::unique_ptr<LoadtestProducer> producer_;
  std::mutex deliveries_mu_;
  std::vector<Delivery> deliveries_;                     // handed over from the poll thread
  std::unordered_map<uint64_t, PendingCommand> unsent_;  // by opaque (sequence)
  std::unordered_map<uint64_t, ChurnExpectations::VersionHandle> awaiting_outcome_;  // by position
  struct EarlyOutcome {
    bool applied = false;
    EpochMs received_ms = 0;
    std::string record;  // kept for a rejection only
  };
  std::unordered_map<uint64_t, EarlyOutcome> early_outcomes_;  // by position
  int64_t applied_ = 0;
  int64_t rejected_ = 0;
  int64_t failed_deliveries_ = 0;
  std::string first_rejection_;
  LatencyHistogram command_to_applied_;
};

}  // namespace belfry::loadtest
