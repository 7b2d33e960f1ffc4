// Shared pieces of the integration tests: a run id, a belfry environment on a throwaway
// database with its own topics, a trigger collector, and wall-clock helpers.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/result>
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
  std::string commands_topic, dlq_topic, results_topic, changes_topic, trigger_topic, triggers_dlq_topic;
  // This world's own executions topics and group: a shared group would join every test's nodes,
  // and their static members (group.instance.id from BELFRY_NODE_ID) would fence each other.
  std::string executions_topic, executions_dlq_topic;
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
  // Waits (up to `timeout_ms`) until this collector holds every record `topic` has at the time
  // of the call (up to its end offsets then), so that all a producer had acknowledged before the
  // call has been collected. False on a timeout or if the end offsets cannot be read.
  bool WaitForEndOf(const std::string& topic, int64_t timeout_ms) const;

 private:
  const std::string brokers_;
  std::unique_ptr<TopicTail> tail_;
  StopSignal stop_;
  mutable std::mutex mu_;
  std::vector<TailRecord> records_;
  std::thread thread_;
};

// The end offset (high watermark) of every partition of `topic`; nullopt on any error.
std::optional<std::map<int32_t, int64_t>> EndOffsets(const std::string& brokers, const std::string& topic);

// The lag of `group` on `topic`: the records past its committed offsets (a partition with none
// counts from 0), summed over the partitions; nullopt on any error.
std::optional<int64_t> ConsumerLag(const std::string& brokers, const std::string& group, const std::string& topic);

// Waits up to `timeout_ms` until ConsumerLag(...) is 0: the group committed up to the topic's end.
bool AwaitLagZero(const std::string& brokers, const std::string& group, const std::string& topic, int64_t timeout_ms);

// Adds an ACL that denies the local stack's client principal (User:ANONYMOUS, PLAINTEXT) writes
// to `topic`, through the broker's StandardAuthorizer (deploy/kafka/server.properties.in). Producers
// then get TOPIC_AUTHORIZATION_FAILED for it; every resource without an ACL stays open. Returns ""
// on success, else the error.
std::string DenyTopicWrites(const std::string& brokers, const std::string& topic);

// The job ids "<prefix>-<n>" whose shard is `shard`, first `count` of them.
std::vector<std::string> IdsInShard(const std::string& prefix, int32_t shard, int count);

// ---- Helpers for the multi-node, fault and load scenarios. ----------------------------------

class PlainProducer;
struct ExpectedJob;

// The repository root (compiled in as BELFRY_SOURCE_DIR).
std::string SourceDir();
// Runs `scripts/local-stack <args>` (fault injection: kafka-stop, pg-start, ...); returns its exit
// code and puts its output in *out.
int LocalStack(const std::string& args, std::string* out = nullptr);
// GET http://127.0.0.1:<port><path> (HTTP/1.0); the body, or nullopt on a connection error.
std::optional<std::string> HttpGet(int port, const std::string& path, int* status = nullptr);
// The value of the Prometheus sample `series` (the exact text before the value, e.g.
// `belfry_shard_minutes_skipped_total{reason="policy"}`), or nullopt if absent.
std::optional<double> MetricValue(const std::string& exposition, const std::string& series);
// An upsert command JSON for a job firing into `topic`.
std::string UpsertCommand(const std::string& id, int interval_minutes, const std::string& topic,
                          const std::string& extra = "");
// Publishes one upsert per id (batched); returns how many were not acknowledged.
size_t PublishUpserts(PlainProducer& producer, const std::string& commands_topic,
                      const std::vector<std::string>& ids, int interval_minutes, const std::string& topic);
// Runs `sql` on a fresh connection to `url` (so it works across a server restart); nullopt on
// any error.
std::optional<pqxx::result> QueryFresh(const std::string& url, const std::string& sql);
// SELECT count(*) ... through QueryFresh; -1 on error.
int64_t CountFresh(const std::string& url, const std::string& sql);
// The stored jobs whose id starts with `id_prefix`, as the verifier expects them. The shard is
// recomputed from the id (ShardForId(id, 120)); *shard_mismatches counts rows that disagree.
std::vector<ExpectedJob> LoadJobs(const std::string& url, const std::string& id_prefix,
                                  int64_t* shard_mismatches = nullptr);
// "<prefix>-0" .. "<prefix>-<n-1>".
std::vector<std::string> MakeIds(const std::string& prefix, int n);
// `per_shard` ids in each of `shard_count` shards: prefix-0, prefix-1, ... skipping any whose shard
// is full. MakeIds leaves a shard empty now and then (FNV-1a's low bits on sequential ids: two of
// 120 shards empty in about 0.2% of 1200-id prefixes); a test that reads each shard needs this.
std::vector<std::string> MakeIdsPerShard(const std::string& prefix, int per_shard, int32_t shard_count);
// CPU time (user + system) a process has used so far, in ms; -1 if it cannot be read.
int64_t ProcessCpuMs(int pid);
// Prints a line to stdout (it ends up in the ctest log) with a wall-clock prefix.
void Note(const std::string& line);

}  // namespace belfry
