#include "core/unacked_triggers.h"

namespace belfry {
namespace {

// What one kept message costs, roughly: its strings plus a fixed overhead.
int64_t SizeOf(const TriggerFailure& f) {
  int64_t n = 128 + static_cast<int64_t>(f.reason.size() + f.error.size() + f.job_id.size() + f.topic.size() +
                                         f.key.size() + f.value.size());
  for (const auto& [name, value] : f.headers) n += 32 + static_cast<int64_t>(name.size() + value.size());
  return n;
}

}  // namespace

bool UnackedTriggers::Keep(int32_t shard, const MinuteRange& range, const ShardLayout& layout,
                           std::vector<TriggerFailure> unacked) {
  Entry e;
  e.layout = layout;
  e.kept_at = clock_.NowMs();
  e.bytes = 64;
  for (const TriggerFailure& f : unacked) e.bytes += SizeOf(f);
  e.unacked = std::move(unacked);
  std::lock_guard<std::mutex> lock(mu_);
  const Key key{shard, {range.first, range.last}};
  if (auto it = entries_.find(key); it != entries_.end()) EraseLocked(it);
  for (auto it = entries_.begin(); it != entries_.end();) {  // a range fired elsewhere is never taken
    if (e.kept_at - it->second.kept_at > max_age_ms_) {
      EraseLocked(it++);
    } else {
      ++it;
    }
  }
  if (bytes_ + e.bytes > max_bytes_) return false;
  bytes_ += e.bytes;
  entries_.emplace(key, std::move(e));
  return true;
}

std::optional<std::vector<TriggerFailure>> UnackedTriggers::Take(int32_t shard, const MinuteRange& range,
                                                                 const ShardLayout& layout, std::string_view* why) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<std::vector<TriggerFailure>> out;
  std::string_view reason;
  const EpochMs now = clock_.NowMs();
  for (auto it = entries_.lower_bound(Key{shard, {INT64_MIN, INT64_MIN}});
       it != entries_.end() && it->first.first == shard;) {
    const auto [first, last] = it->first.second;
    if (last < range.first || first > range.last) {
      ++it;
      continue;
    }
    if (first != range.first || last != range.last) {
      reason = kRangeChanged;
    } else if (!(it->second.layout == layout)) {
      reason = kLayoutChanged;
    } else if (now - it->second.kept_at > max_age_ms_) {
      reason = kExpired;
    } else {
      out = std::move(it->second.unacked);
    }
    EraseLocked(it++);
  }
  if (!out && why != nullptr) *why = reason;
  return out;
}

int64_t UnackedTriggers::DropShard(int32_t shard) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (auto it = entries_.lower_bound(Key{shard, {INT64_MIN, INT64_MIN}});
       it != entries_.end() && it->first.first == shard; ++n) {
    EraseLocked(it++);
  }
  return n;
}

int64_t UnackedTriggers::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

int64_t UnackedTriggers::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

void UnackedTriggers::EraseLocked(std::map<Key, Entry>::iterator it) {
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

}  // namespace belfry
