#include "itest_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "belfry_process.h"
#include "core/shard_hash.h"

namespace belfry {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SleepUntilWallMs(int64_t t) {
  const int64_t now = WallMs();
  if (t > now) std::this_thread::sleep_for(std::chrono::milliseconds(t - now));
}

bool WaitFor(const std::function<bool()>& cond, int64_t timeout_ms) {
  const int64_t end = WallMs() + timeout_ms;
  while (true) {
    if (cond()) return true;
    if (WallMs() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::map<std::string, std::string> ItestWorld::Env(const std::string& group) const {
  return {{"BELFRY_DATABASE_URL", db->url()},
          {"BELFRY_KAFKA_BROKERS", brokers},
          {"BELFRY_KAFKA_COMMANDS_TOPIC", commands_topic},
          {"BELFRY_KAFKA_DLQ_TOPIC", dlq_topic},
          {"BELFRY_KAFKA_RESULTS_TOPIC", results_topic},
          {"BELFRY_KAFKA_GROUP_ID", "it-" + run_id + (group.empty() ? "" : "-" + group)},
          {"BELFRY_ADMIN_LISTEN", "127.0.0.1:0"},
          {"BELFRY_MIGRATIONS_DIR", MigrationsDir()},
          {"BELFRY_LOG_LEVEL", "info"}};
}

std::unique_ptr<ItestWorld> ItestWorld::Create(const std::string& name) {
  auto w = std::make_unique<ItestWorld>();
  std::mt19937_64 rng(std::random_device{}());
  w->run_id = name + "-" + std::to_string(getpid()) + "-" + std::to_string(rng() % 100000);
  const char* brokers = std::getenv("BELFRY_KAFKA_BROKERS");
  if (!brokers) {
    ADD_FAILURE() << "BELFRY_KAFKA_BROKERS is not set: run via scripts/test (eval $(scripts/local-stack env))";
    return nullptr;
  }
  w->brokers = brokers;
  std::string error;
  w->db = PgTestDatabase::Create(&error);
  if (!w->db) {
    ADD_FAILURE() << "cannot create a test database: " << error;
    return nullptr;
  }
  const std::string t = "it." + w->run_id;
  w->commands_topic = t + ".commands";
  w->dlq_topic = t + ".dlq";
  w->results_topic = t + ".results";
  w->trigger_topic = t + ".triggers";
  std::string out;
  const int rc = RunBelfry({"migrate"}, w->Env(), &out);
  if (rc != 0) {
    ADD_FAILURE() << "belfry migrate failed (" << rc << "): " << out;
    return nullptr;
  }
  return w;
}

TopicCollector::TopicCollector(const std::string& brokers, std::vector<std::string> topics) {
  KafkaConfig cfg;
  cfg.brokers = brokers;
  TopicTailOptions options;
  options.from_beginning = true;
  auto tail = TopicTail::Create(cfg, std::move(topics), options);
  if (!tail.ok()) {
    ADD_FAILURE() << "TopicTail: " << tail.status().ToString();
    return;
  }
  tail_ = std::move(tail.value());
  thread_ = std::thread([this] {
    tail_->Run(stop_, [this](const TailRecord& r) {
      std::lock_guard<std::mutex> lock(mu_);
      records_.push_back(r);
    });
  });
}

TopicCollector::~TopicCollector() {
  stop_.Request();
  if (thread_.joinable()) thread_.join();
}

std::vector<TailRecord> TopicCollector::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

size_t TopicCollector::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

std::vector<std::string> IdsInShard(const std::string& prefix, int32_t shard, int count) {
  std::vector<std::string> out;
  for (int n = 0; static_cast<int>(out.size()) < count; ++n) {
    std::string id = prefix + "-" + std::to_string(n);
    if (ShardForId(id, 120) == shard) out.push_back(id);
  }
  return out;
}

}  // namespace belfry
