#include "kafka/kafka_test_util.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>

namespace belfry::testing {
namespace {

// Fails the whole run, loudly, when the broker address is missing: these tests need the real
// broker from scripts/local-stack and must not pass vacuously.
class RequireBrokersEnvironment final : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* brokers = std::getenv("BELFRY_KAFKA_BROKERS");
    if (brokers == nullptr || *brokers == '\0') {
      GTEST_FAIL() << "BELFRY_KAFKA_BROKERS is not set. kafka_test needs a real broker: run "
                      "`scripts/local-stack up && eval \"$(scripts/local-stack env)\"` first.";
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kRequireBrokers =
    ::testing::AddGlobalTestEnvironment(new RequireBrokersEnvironment());

}  // namespace

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  static const uint32_t salt = std::random_device{}();
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(salt % 1000000) + "-" +
         std::to_string(counter.fetch_add(1));
}

KafkaConfig TestKafkaConfig() {
  KafkaConfig c;
  const char* brokers = std::getenv("BELFRY_KAFKA_BROKERS");
  c.brokers = brokers != nullptr ? brokers : "";
  c.commands_topic = UniqueName("kt.commands");
  c.dlq_topic = UniqueName("kt.commands.dlq");
  c.results_topic = UniqueName("kt.command-results");
  c.changes_topic = UniqueName("kt.changes");
  c.group_id = UniqueName("kt-group");
  return c;
}

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::map<int32_t, int64_t> CommittedOffsets(const std::string& group, const std::string& topic,
                                            int32_t partitions) {
  std::string errstr;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", std::getenv("BELFRY_KAFKA_BROKERS"), errstr);
  conf->set("group.id", group, errstr);
  conf->set("enable.auto.commit", "false", errstr);
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf.get(), errstr));
  std::vector<RdKafka::TopicPartition*> parts;
  for (int32_t p = 0; p < partitions; ++p) parts.push_back(RdKafka::TopicPartition::create(topic, p));
  std::map<int32_t, int64_t> out;
  if (c->committed(parts, 10000) == RdKafka::ERR_NO_ERROR) {
    for (const RdKafka::TopicPartition* tp : parts) out[tp->partition()] = tp->offset();
  }
  RdKafka::TopicPartition::destroy(parts);
  c->close();
  return out;
}

std::vector<TailRecord> ReadTopicFromStart(const KafkaConfig& config, const std::string& topic, size_t want) {
  TopicTailOptions options;
  options.from_beginning = true;
  StatusOr<std::unique_ptr<TopicTail>> tail = TopicTail::Create(config, {topic}, options);
  EXPECT_TRUE(tail.ok());
  std::vector<TailRecord> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (tail.ok() && out.size() < want && std::chrono::steady_clock::now() < deadline) {
    (*tail)->Poll(std::chrono::milliseconds(200), [&](const TailRecord& r) { out.push_back(r); });
  }
  if (tail.ok()) (*tail)->Poll(std::chrono::milliseconds(500), [&](const TailRecord& r) { out.push_back(r); });
  return out;
}

Status ProduceMessages(const std::string& topic,
                       const std::vector<std::pair<std::string, std::string>>& messages,
                       std::optional<int32_t> partition) {
  std::string errstr;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", std::getenv("BELFRY_KAFKA_BROKERS"), errstr);
  conf->set("enable.idempotence", "true", errstr);
  std::unique_ptr<RdKafka::Producer> p(RdKafka::Producer::create(conf.get(), errstr));
  if (p == nullptr) return Status::Invalid("kafka_config", errstr);
  for (const auto& [key, value] : messages) {
    const RdKafka::ErrorCode err = p->produce(topic, partition.value_or(RdKafka::Topic::PARTITION_UA),
                                              RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(value.data()),
                                              value.size(), key.data(), key.size(), 0, nullptr, nullptr);
    if (err != RdKafka::ERR_NO_ERROR) return Status::Retryable("produce: " + RdKafka::err2str(err));
  }
  if (p->flush(30000) != RdKafka::ERR_NO_ERROR || p->outq_len() != 0) {
    return Status::Retryable("flush timed out");
  }
  return Status::Ok();
}

StatusOr<ExecutionApplyResult> RecordingExecutionStore::ApplyReports(
    const std::vector<ExecutionReport>& reports) {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_;
  if (failing_) return Status::Retryable("connection to PostgreSQL lost");
  if (throw_next_ > 0) {
    --throw_next_;
    throw std::runtime_error("the execution store threw");
  }
  ExecutionApplyResult result;
  for (const ExecutionReport& r : reports) {
    const std::string key = r.job_id + "/" + std::to_string(r.scheduled_for_ms) + "/" +
                            std::to_string(r.attempt) + "/" + ExecutionStatusName(r.status);
    if (++stored_[key] == 1) ++result.stored;
  }
  return result;
}

void RecordingExecutionStore::ThrowNext(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  throw_next_ = n;
}

void RecordingExecutionStore::SetFailing(bool failing) {
  std::lock_guard<std::mutex> lock(mu_);
  failing_ = failing;
}

int RecordingExecutionStore::apply_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::map<std::string, int> RecordingExecutionStore::stored() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stored_;
}

Status RecordingCommandStore::ApplyActions(const std::vector<JobAction>& actions) {
  std::function<void(int)> hook;
  int call = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    call = ++calls_;
    hook = on_apply_;
  }
  if (hook) hook(call);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_next_ > 0) {
      --fail_next_;
      return fail_status_;
    }
  }
  Status s = inner_.ApplyActions(actions);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    applied_.push_back(actions);
  }
  return s;
}

void RecordingCommandStore::FailNextApplies(int n, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = n;
  fail_status_ = std::move(status);
}

void RecordingCommandStore::SetOnApply(std::function<void(int)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  on_apply_ = std::move(fn);
}

int RecordingCommandStore::apply_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::vector<std::vector<JobAction>> RecordingCommandStore::applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_;
}

}  // namespace belfry::testing
