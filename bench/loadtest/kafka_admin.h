// Topic administration for the harness: creating the topics a run writes to, so that their
// partition counts are chosen rather than left to broker auto-creation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace belfry::loadtest {

// Creates each topic that does not exist yet with `partitions` partitions (replication factor
// = the broker default). Existing topics are left as they are. Throws std::runtime_error.
void EnsureTopics(const std::string& brokers, const std::vector<std::string>& topics, int32_t partitions);

// Partition counts of every topic on the cluster. Throws std::runtime_error.
std::map<std::string, int32_t> ListTopicPartitions(const std::string& brokers);

}  // namespace belfry::loadtest
