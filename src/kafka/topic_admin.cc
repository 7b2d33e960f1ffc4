#include "kafka/topic_admin.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <thread>

#include "kafka/kafka_client_config.h"

namespace belfry {
namespace {

struct NewTopicDeleter {
  void operator()(rd_kafka_NewTopic_t* t) const { rd_kafka_NewTopic_destroy(t); }
};
struct AdminOptionsDeleter {
  void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
};
struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
struct EventDeleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};

bool IsInvalidSpecError(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
    case RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR:
    case RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT:
    case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
    case RD_KAFKA_RESP_ERR_INVALID_REQUEST:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
      return true;
    default:
      return false;
  }
}

// True iff every topic in `names` is in the broker's metadata with a leader for each partition.
bool AllVisible(rd_kafka_t* rk, const std::vector<std::string>& names) {
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk, 1, nullptr, &md, 2000) != RD_KAFKA_RESP_ERR_NO_ERROR) return false;
  std::unique_ptr<const rd_kafka_metadata_t, void (*)(const rd_kafka_metadata_t*)> owned(
      md, rd_kafka_metadata_destroy);
  size_t visible = 0;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& t = md->topics[i];
    if (std::find(names.begin(), names.end(), t.topic) == names.end()) continue;
    if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR || t.partition_cnt == 0) return false;
    for (int p = 0; p < t.partition_cnt; ++p) {
      if (t.partitions[p].leader < 0) return false;
    }
    ++visible;
  }
  return visible == names.size();
}

}  // namespace

std::vector<TopicSpec> BelfryTopicSpecs(const KafkaConfig& config) {
  return {
      TopicSpec{config.commands_topic, 12, -1, {}},
      TopicSpec{config.dlq_topic, 3, -1, {}},
      TopicSpec{config.results_topic, 6, -1, {}},
      TopicSpec{config.changes_topic, 6, -1, {{"cleanup.policy", "compact"}}},
      TopicSpec{config.triggers_dlq_topic, 3, -1, {}},
  };
}

Status EnsureTopics(const KafkaConfig& config, const std::vector<TopicSpec>& topics, int64_t timeout_ms) {
  if (topics.empty()) return Status::Ok();
  StatusOr<RdKafkaConfPtr> conf = BuildKafkaCConf(config, "belfry-admin", {});
  if (!conf.ok()) return conf.status();
  std::array<char, 512> errstr{};
  RdKafkaPtr rk(rd_kafka_new(RD_KAFKA_PRODUCER, conf.value().get(), errstr.data(), errstr.size()));
  if (rk == nullptr)
    return Status::Invalid("kafka_config", std::string("creating admin client: ") + errstr.data());
  conf.value().release();  // owned by rk now

  std::vector<std::unique_ptr<rd_kafka_NewTopic_t, NewTopicDeleter>> owned;
  std::vector<rd_kafka_NewTopic_t*> raw;
  for (const TopicSpec& spec : topics) {
    std::unique_ptr<rd_kafka_NewTopic_t, NewTopicDeleter> nt(rd_kafka_NewTopic_new(
        spec.name.c_str(), spec.partitions, spec.replication_factor, errstr.data(), errstr.size()));
    if (nt == nullptr) return Status::Invalid("invalid_topic", "topic '" + spec.name + "': " + errstr.data());
    for (const auto& [key, value] : spec.configs) {
      if (rd_kafka_resp_err_t err = rd_kafka_NewTopic_set_config(nt.get(), key.c_str(), value.c_str()); err) {
        return Status::Invalid("invalid_topic",
                               "topic '" + spec.name + "' config '" + key + "': " + rd_kafka_err2str(err));
      }
    }
    raw.push_back(nt.get());
    owned.push_back(std::move(nt));
  }

  std::unique_ptr<rd_kafka_AdminOptions_t, AdminOptionsDeleter> options(
      rd_kafka_AdminOptions_new(rk.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS));
  rd_kafka_AdminOptions_set_request_timeout(options.get(), static_cast<int>(timeout_ms), errstr.data(),
                                            errstr.size());
  rd_kafka_AdminOptions_set_operation_timeout(options.get(), static_cast<int>(timeout_ms), errstr.data(),
                                              errstr.size());
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> queue(rd_kafka_queue_new(rk.get()));
  rd_kafka_CreateTopics(rk.get(), raw.data(), raw.size(), options.get(), queue.get());

  std::unique_ptr<rd_kafka_event_t, EventDeleter> event(
      rd_kafka_queue_poll(queue.get(), static_cast<int>(timeout_ms + 5000)));
  if (event == nullptr) {
    return Status::Retryable("creating topics: no answer from the broker within " +
                             std::to_string(timeout_ms) + " ms");
  }
  if (rd_kafka_resp_err_t err = rd_kafka_event_error(event.get()); err) {
    return Status::Retryable(std::string("creating topics: ") + rd_kafka_event_error_string(event.get()));
  }
  const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(event.get());
  if (result == nullptr) return Status::Retryable("creating topics: unexpected admin event");
  size_t count = 0;
  const rd_kafka_topic_result_t** results = rd_kafka_CreateTopics_result_topics(result, &count);

  Status first_failure;
  for (size_t i = 0; i < count; ++i) {
    const rd_kafka_resp_err_t err = rd_kafka_topic_result_error(results[i]);
    const char* name = rd_kafka_topic_result_name(results[i]);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      spdlog::info("kafka: created topic '{}'", name);
      continue;
    }
    if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
      spdlog::debug("kafka: topic '{}' already exists", name);
      continue;
    }
    const char* detail = rd_kafka_topic_result_error_string(results[i]);
    const std::string message = std::string("creating topic '") + name + "': " + rd_kafka_err2str(err) +
                                (detail != nullptr ? std::string(" (") + detail + ")" : std::string());
    spdlog::error("kafka: {}", message);
    if (first_failure.ok()) {
      first_failure =
          IsInvalidSpecError(err) ? Status::Invalid("invalid_topic", message) : Status::Retryable(message);
    }
  }
  if (!first_failure.ok()) return first_failure;

  // CreateTopics returns once the controller has the topics; wait until the brokers serve them
  // too, so that a caller may produce or consume right away.
  std::vector<std::string> names;
  for (const TopicSpec& spec : topics) names.push_back(spec.name);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!AllVisible(rk.get(), names)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Retryable("topics created but not yet served by the brokers after " +
                               std::to_string(timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::Ok();
}

}  // namespace belfry
