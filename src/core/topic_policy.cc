#include "core/topic_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/message_quote.h"

namespace belfry {
namespace {

constexpr size_t kMaxTopicLength = 249;

bool IsTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

// The topic, quoted, with anything outside printable ASCII escaped and at most kMaxEchoBytes shown.
std::string QuoteTopic(std::string_view topic) {
  std::string out = "\"";
  for (size_t i = 0; i < topic.size() && i < kMaxEchoBytes; ++i) {
    const auto c = static_cast<unsigned char>(topic[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (topic.size() > kMaxEchoBytes) out += fmt::format("... ({} bytes)", topic.size());
  return out;
}

}  // namespace

bool IsValidKafkaTopicName(std::string_view topic) {
  if (topic.empty() || topic.size() > kMaxTopicLength) return false;
  if (topic == "." || topic == "..") return false;
  return std::all_of(topic.begin(), topic.end(), IsTopicChar);
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Greedy match with backtracking to the most recent '*': O(|pattern| * |text|) worst case.
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

TopicPolicy::TopicPolicy(std::vector<std::string> allowed_globs, std::vector<std::string> reserved_topics)
    : allowed_globs_(std::move(allowed_globs)), reserved_topics_(std::move(reserved_topics)) {}

Status TopicPolicy::Check(std::string_view topic) const {
  if (!IsValidKafkaTopicName(topic)) {
    return Status::Invalid("invalid_topic",
                           fmt::format("topic {} is not a valid Kafka topic name (1-249 characters of "
                                       "[a-zA-Z0-9._-], not \".\" or \"..\")",
                                       QuoteTopic(topic)));
  }
  if (topic.starts_with("__")) {
    return Status::Invalid("forbidden_topic",
                           fmt::format("topic {} is a Kafka-internal topic (\"__*\")", QuoteTopic(topic)));
  }
  if (std::find(reserved_topics_.begin(), reserved_topics_.end(), topic) != reserved_topics_.end()) {
    return Status::Invalid("forbidden_topic",
                           fmt::format("topic {} is one of belfry's own topics", QuoteTopic(topic)));
  }
  const bool allowed = std::any_of(allowed_globs_.begin(), allowed_globs_.end(),
                                   [&](const std::string& glob) { return GlobMatch(glob, topic); });
  if (!allowed) {
    return Status::Invalid("forbidden_topic", fmt::format("topic {} is not in the allowlist of output topics",
                                                          QuoteTopic(topic)));
  }
  return Status::Ok();
}

}  // namespace belfry
