#include "fakes/fake_shard_ledger.h"

#include <algorithm>

namespace belfry {

FakeShardLedger::FakeShardLedger(int32_t shard_count, Clock& clock) : clock_(clock) {
  for (int32_t s = 0; s < shard_count; ++s) rows_[s] = Row{};
}

StatusOr<ShardClaim> FakeShardLedger::Claim(int32_t shard, int64_t up_to_minute, const std::string& node,
                                            int64_t lease_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[shard];
  const EpochMs now = clock_.NowMs();
  ShardClaim c;
  c.fired_through = r.fired_through;
  const bool behind = !r.fired_through || *r.fired_through < up_to_minute;
  const bool free = r.claim_node.empty() || r.claim_until <= now || r.claim_node == node;
  if (behind && free) {
    r.claim_node = node;
    r.claim_until = now + lease_ms;
    c.claimed = true;
  }
  return c;
}

Status FakeShardLedger::MarkFired(int32_t shard, int64_t minute, const std::string& node, int64_t lease_ms,
                                  bool release) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[shard];
  if (r.claim_node != node) return Status::FailedPrecondition("claim lost");
  r.fired_through = std::max(r.fired_through.value_or(minute), minute);
  if (release) {
    r.claim_node.clear();
    r.claim_until = 0;
  } else {
    r.claim_until = clock_.NowMs() + lease_ms;
  }
  return Status::Ok();
}

Status FakeShardLedger::Release(int32_t shard, const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_releases_) return Status::Retryable("release failed (FakeShardLedger::FailReleases)");
  Row& r = rows_[shard];
  if (r.claim_node == node) {
    r.claim_node.clear();
    r.claim_until = 0;
  }
  return Status::Ok();
}

void FakeShardLedger::FailReleases(bool fail) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_releases_ = fail;
}

StatusOr<std::vector<ShardState>> FakeShardLedger::LoadStates() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ShardState> out;
  const EpochMs now = clock_.NowMs();
  for (const auto& [shard, r] : rows_) {
    ShardState s;
    s.shard = shard;
    s.fired_through = r.fired_through;
    s.claim_node = r.claim_node;
    if (!r.claim_node.empty()) s.claim_until = r.claim_until;
    s.claim_live = !r.claim_node.empty() && r.claim_until > now;
    out.push_back(s);
  }
  return out;
}

void FakeShardLedger::SetFiredThrough(int32_t shard, int64_t minute) {
  std::lock_guard<std::mutex> lock(mu_);
  rows_[shard].fired_through = minute;
}

std::optional<int64_t> FakeShardLedger::FiredThrough(int32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rows_.find(shard);
  return it == rows_.end() ? std::nullopt : it->second.fired_through;
}

}  // namespace belfry
