// TopicPolicy: which output topics jobs may name. belfry's own topics and Kafka's internal
// "__*" topics are always refused; beyond that, an allowlist of glob patterns ('*' = any run).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "belfry/status.h"

namespace belfry {

// Kafka's rules: 1..249 chars of [a-zA-Z0-9._-], and not "." or "..".
bool IsValidKafkaTopicName(std::string_view topic);

// '*' matches any (possibly empty) run of characters; every other character matches itself.
bool GlobMatch(std::string_view pattern, std::string_view text);

class TopicPolicy final {
 public:
  TopicPolicy(std::vector<std::string> allowed_globs, std::vector<std::string> reserved_topics);

  // Ok, or Invalid with reason "invalid_topic" or "forbidden_topic".
  Status Check(std::string_view topic) const;

 private:
  std::vector<std::string> allowed_globs_;
  std::vector<std::string> reserved_topics_;
};

}  // namespace belfry
