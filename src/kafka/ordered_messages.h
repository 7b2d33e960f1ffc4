// OrderedMessages: a poll batch that keeps each partition's messages in offset order across
// rewinds. Private to src/kafka; a template only so that it can be tested without a broker.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace belfry {

// `Ptr` is a pointer-like handle to a message with topic_name(), partition() and offset()
// (std::unique_ptr<RdKafka::Message> in production).
//
// Appending a message at or before the last offset seen for its partition means the partition
// was rewound (a re-assignment resumes from the committed offset, a seek, ...) and is
// re-delivering messages: that partition's messages from the rewound offset on are dropped
// first, so an older command is never applied after a newer one for the same job.
template <typename Ptr>
class OrderedMessages final {
 public:
  using Key = std::pair<std::string, int32_t>;  // (topic, partition)

  void Append(Ptr m) {
    Key key{m->topic_name(), m->partition()};
    const int64_t offset = m->offset();
    auto it = last_offset_.find(key);
    if (it != last_offset_.end() && offset <= it->second) {
      std::erase_if(messages_, [&](const Ptr& b) {
        return b->partition() == key.second && b->offset() >= offset && b->topic_name() == key.first;
      });
    }
    last_offset_[std::move(key)] = offset;
    messages_.push_back(std::move(m));
  }

  // Drops the messages of every partition for which keep(Key) is false.
  template <typename Pred>
  void Retain(Pred keep) {
    std::erase_if(messages_, [&](const Ptr& m) { return !keep(Key{m->topic_name(), m->partition()}); });
    std::erase_if(last_offset_, [&](const auto& entry) { return !keep(entry.first); });
  }

  // Returns the messages in order and leaves this empty.
  std::vector<Ptr> Take() {
    last_offset_.clear();
    return std::exchange(messages_, {});
  }
  bool empty() const { return messages_.empty(); }
  size_t size() const { return messages_.size(); }

 private:
  std::vector<Ptr> messages_;
  std::map<Key, int64_t> last_offset_;
};

}  // namespace belfry
