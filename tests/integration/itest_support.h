// Shared pieces of the integration tests: a run id, a belfry environment on a throwaway
// database with its own topics, a trigger collector, and wall-clock helpers.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "belfry/stop_signal.h"
#include "kafka/topic_tail.h"
#include "pg_test_database.h"

namespace belfry {

int64_t WallMs();
void SleepUntilWallMs(int64_t t);
// Polls `cond` every 100 ms until it holds or `timeout_ms` passes.
bool WaitFor(const std::function<bool()>& cond, int64_t timeout_ms);

// A throwaway database and topic names for one test suite, and the environment that points a
// belfry process at them.
struct ItestWorld {
  std::string run_id;  // unique per test process
  std::unique_ptr<PgTestDatabase> db;
  std::string brokers;
  std::string commands_topic, dlq_topic, results_topic, trigger_topic;
  std::map<std::string, std::string> Env(const std::string& group = "") const;

  // Creates the database and runs `belfry migrate`; fails the calling test on error.
  static std::unique_ptr<ItestWorld> Create(const std::string& name);
};

// Collects every record of some topics on a background thread.
class TopicCollector final {
 public:
  TopicCollector(const std::string& brokers, std::vector<std::string> topics);
  ~TopicCollector();
  std::vector<TailRecord> records() const;
  size_t size() const;

 private:
  std::unique_ptr<TopicTail> tail_;
  StopSignal stop_;
  mutable std::mutex mu_;
  std::vector<TailRecord> records_;
  std::thread thread_;
};

// The job ids "<prefix>-<n>" whose shard is `shard`, first `count` of them.
std::vector<std::string> IdsInShard(const std::string& prefix, int32_t shard, int count);

}  // namespace belfry
