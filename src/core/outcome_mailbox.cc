#include "core/outcome_mailbox.h"

#include <nlohmann/json.hpp>

namespace belfry {

void OutcomeMailbox::Expect(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  ++expected_[key];
}

void OutcomeMailbox::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = expected_.find(key);
  if (it == expected_.end()) return;
  if (--it->second > 0) return;
  expected_.erase(it);
  // No request waits for this key any more: what is held for it would never be taken.
  for (auto h = held_.begin(); h != held_.end();) {
    h = h->second.key == key ? held_.erase(h) : std::next(h);
  }
}

void OutcomeMailbox::Offer(std::string_view key, std::string_view value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!expected_.contains(key)) return;
  }
  const nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  const auto p = j.find("partition");
  const auto o = j.find("offset");
  if (p == j.end() || o == j.end() || !p->is_number_integer() || !o->is_number_integer()) return;
  const Position at{p->get<int32_t>(), o->get<int64_t>()};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!expected_.contains(key)) return;  // forgotten while it was parsed
    held_[at] = Held{std::string(key), std::string(value), next_seq_++};
    while (held_.size() > max_held_) DropOldestLocked();
  }
  arrived_.notify_all();
}

std::optional<std::string> OutcomeMailbox::Await(const std::string& key, int32_t partition, int64_t offset,
                                                 std::chrono::steady_clock::time_point deadline) {
  const Position at{partition, offset};
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto it = held_.find(at);
    if (it != held_.end() && it->second.key == key) {
      std::string outcome = std::move(it->second.outcome);
      held_.erase(it);
      return outcome;
    }
    if (arrived_.wait_until(lock, deadline) == std::cv_status::timeout) {
      it = held_.find(at);
      if (it == held_.end() || it->second.key != key) return std::nullopt;
    }
  }
}

size_t OutcomeMailbox::expected_keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return expected_.size();
}

size_t OutcomeMailbox::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

void OutcomeMailbox::DropOldestLocked() {
  auto oldest = held_.begin();
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (it->second.seq < oldest->second.seq) oldest = it;
  }
  held_.erase(oldest);
}

}  // namespace belfry
