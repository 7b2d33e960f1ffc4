#include "fakes/fake_shard_ledger.h"

#include <algorithm>

namespace belfry {

FakeShardLedger::FakeShardLedger(int32_t shard_count, Clock& clock) : clock_(clock) {
  layout_.from = shard_count;
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
    c.read_fence = ++fence_;
    c.layout = layout_;
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

Status FakeShardLedger::Advance(int32_t shard, int64_t minute, const MinuteRange& add_debt,
                                const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[shard];
  if (r.claim_node != node) return Status::FailedPrecondition("claim lost");
  r.fired_through = std::max(r.fired_through.value_or(minute), minute);
  for (int64_t m = add_debt.first; m <= add_debt.last; ++m) r.debt.insert(m);
  r.claim_node.clear();
  r.claim_until = 0;
  return Status::Ok();
}

StatusOr<DebtClaim> FakeShardLedger::ClaimDebt(int32_t shard, const std::string& node, int64_t lease_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[shard];
  const EpochMs now = clock_.NowMs();
  DebtClaim c;
  const bool free = r.debt_node.empty() || r.debt_until <= now || r.debt_node == node;
  if (r.debt.empty() || !free) return c;
  r.debt_node = node;
  r.debt_until = now + lease_ms;
  c.claimed = true;
  c.lowest.first = *r.debt.begin();
  c.lowest.last = c.lowest.first;
  while (r.debt.count(c.lowest.last + 1)) ++c.lowest.last;
  c.owed_minutes = static_cast<int64_t>(r.debt.size());
  c.read_fence = ++fence_;
  c.layout = layout_;
  return c;
}

Status FakeShardLedger::RenewDebt(int32_t shard, const std::string& node, int64_t lease_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[shard];
  if (r.debt_node != node) return Status::FailedPrecondition("debt lease lost");
  r.debt_until = clock_.NowMs() + lease_ms;
  return Status::Ok();
}

Status FakeShardLedger::SettleDebt(int32_t shard, const MinuteRange& paid, const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[shard];
  if (r.debt_node != node) return Status::FailedPrecondition("debt lease lost");
  for (int64_t m = paid.first; m <= paid.last; ++m) r.debt.erase(m);
  r.debt_node.clear();
  r.debt_until = 0;
  return Status::Ok();
}

Status FakeShardLedger::ReleaseDebt(int32_t shard, const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[shard];
  if (r.debt_node == node) {
    r.debt_node.clear();
    r.debt_until = 0;
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
    s.debt_minutes = static_cast<int64_t>(r.debt.size());
    if (!r.debt.empty()) s.debt_first = *r.debt.begin();
    s.debt_node = r.debt_node;
    s.debt_live = !r.debt_node.empty() && r.debt_until > now;
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

namespace belfry {

std::set<int64_t> FakeShardLedger::Debt(int32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rows_.find(shard);
  return it == rows_.end() ? std::set<int64_t>{} : it->second.debt;
}

int64_t FakeShardLedger::TotalDebt() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [shard, r] : rows_) n += static_cast<int64_t>(r.debt.size());
  return n;
}

void FakeShardLedger::AddDebt(int32_t shard, const MinuteRange& minutes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t m = minutes.first; m <= minutes.last; ++m) rows_[shard].debt.insert(m);
}

}  // namespace belfry
