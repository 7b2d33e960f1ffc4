// TopicAdmin: creates belfry's topics (used by `belfry migrate`) through the Admin API.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "belfry/config.h"
#include "belfry/status.h"

namespace belfry {

struct TopicSpec {
  std::string name;
  int32_t partitions = -1;                     // -1: the broker's default
  int32_t replication_factor = -1;             // -1: the broker's default
  std::map<std::string, std::string> configs;  // topic-level configs, e.g. cleanup.policy
};

// belfry's own topics: config.commands_topic (12 partitions), config.dlq_topic (3),
// config.results_topic (6), config.changes_topic (6, compacted: the audit trail's events, keyed
// by job id) and config.triggers_dlq_topic (3), with the broker's default replication factor.
std::vector<TopicSpec> BelfryTopicSpecs(const KafkaConfig& config);

// Creates every topic in `topics` that does not exist yet, then waits until the brokers serve all
// of them (each partition has a leader). A topic that already exists counts as
// success and is left as it is (its partition count is not changed). Safe to run concurrently
// from several nodes. Invalid for a rejected spec (bad name, partitions, config), Retryable for
// broker faults or a timeout.
Status EnsureTopics(const KafkaConfig& config, const std::vector<TopicSpec>& topics,
                    int64_t timeout_ms = 30000);

}  // namespace belfry
