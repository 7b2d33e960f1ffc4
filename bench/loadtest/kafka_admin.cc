#include "loadtest/kafka_admin.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>

#include <memory>
#include <stdexcept>

namespace belfry::loadtest {
namespace {

constexpr int kTimeoutMs = 15000;

struct RdKafkaDestroyer {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using RdKafkaHandle = std::unique_ptr<rd_kafka_t, RdKafkaDestroyer>;

RdKafkaHandle NewClient(const std::string& brokers) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), errstr, sizeof errstr) !=
          RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "client.id", "belfry-loadtest-admin", errstr, sizeof errstr) !=
          RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(errstr);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("creating the Kafka admin client: ") + errstr);
  }
  return RdKafkaHandle(rk);
}

}  // namespace

std::map<std::string, int32_t> ListTopicPartitions(const std::string& brokers) {
  RdKafkaHandle rk = NewClient(brokers);
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t err = rd_kafka_metadata(rk.get(), 1, nullptr, &md, kTimeoutMs);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error(fmt::format("Kafka metadata from {}: {}", brokers, rd_kafka_err2str(err)));
  }
  std::map<std::string, int32_t> out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR)
      out[md->topics[i].topic] = md->topics[i].partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  return out;
}

void EnsureTopics(const std::string& brokers, const std::vector<std::string>& topics, int32_t partitions) {
  const std::map<std::string, int32_t> existing = ListTopicPartitions(brokers);
  std::vector<std::string> missing;
  for (const std::string& t : topics) {
    if (existing.count(t) == 0) missing.push_back(t);
  }
  if (missing.empty()) return;

  RdKafkaHandle rk = NewClient(brokers);
  char errstr[512];
  std::vector<rd_kafka_NewTopic_t*> new_topics;
  for (const std::string& t : missing) {
    rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(t.c_str(), partitions, -1, errstr, sizeof errstr);
    if (nt == nullptr) {
      rd_kafka_NewTopic_destroy_array(new_topics.data(), new_topics.size());
      throw std::runtime_error(fmt::format("topic {}: {}", t, errstr));
    }
    new_topics.push_back(nt);
  }
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk.get());
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(options, kTimeoutMs, errstr, sizeof errstr);
  rd_kafka_CreateTopics(rk.get(), new_topics.data(), new_topics.size(), options, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, kTimeoutMs + 5000);
  std::string error;
  if (event == nullptr) {
    error = "timed out creating topics";
  } else if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = rd_kafka_event_error_string(event);
  } else {
    size_t count = 0;
    const rd_kafka_topic_result_t** results =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(event), &count);
    for (size_t i = 0; i < count; ++i) {
      const rd_kafka_resp_err_t err = rd_kafka_topic_result_error(results[i]);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        error = fmt::format("creating {}: {}", rd_kafka_topic_result_name(results[i]),
                            rd_kafka_topic_result_error_string(results[i]));
      }
    }
  }
  if (event != nullptr) rd_kafka_event_destroy(event);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy_array(new_topics.data(), new_topics.size());
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace belfry::loadtest
