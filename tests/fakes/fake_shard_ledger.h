// FakeShardLedger: an in-memory ShardLedger whose leases run on the injected Clock.
#pragma once

#include <map>
#include <mutex>
#include <set>

#include "belfry/clock.h"
#include "belfry/shard_ledger.h"

namespace belfry {

class FakeShardLedger final : public ShardLedger {
 public:
  FakeShardLedger(int32_t shard_count, Clock& clock);

  StatusOr<ShardClaim> Claim(int32_t shard, int64_t up_to_minute, const std::string& node, int64_t lease_ms) override;
  Status MarkFired(int32_t shard, int64_t minute, const std::string& node, int64_t lease_ms, bool release) override;
  Status Advance(int32_t shard, int64_t minute, const MinuteRange& add_debt,
                 const std::string& node) override;
  Status Release(int32_t shard, const std::string& node) override;
  StatusOr<DebtClaim> ClaimDebt(int32_t shard, const std::string& node, int64_t lease_ms) override;
  Status RenewDebt(int32_t shard, const std::string& node, int64_t lease_ms) override;
  Status SettleDebt(int32_t shard, const MinuteRange& paid, const std::string& node) override;
  Status ReleaseDebt(int32_t shard, const std::string& node) override;
  StatusOr<std::vector<ShardState>> LoadStates() override;
  StatusOr<ShardLayout> ReadLayout() override {
    std::lock_guard<std::mutex> lock(mu_);
    return layout_;
  }

  // Test controls.
  void SetFiredThrough(int32_t shard, int64_t minute);
  std::optional<int64_t> FiredThrough(int32_t shard) const;
  // While set, Release() fails with Retryable and releases nothing.
  void FailReleases(bool fail);
  std::set<int64_t> Debt(int32_t shard) const;  // the minutes owed
  int64_t TotalDebt() const;
  void AddDebt(int32_t shard, const MinuteRange& minutes);

  // The read fence of the last successful claim or debt claim: each one gets the next number
  // from 1, as a log position grows.
  // The layout record every claim returns (default: stable at the ledger's shard count).
  void SetLayout(const ShardLayout& layout) {
    std::lock_guard<std::mutex> lock(mu_);
    layout_ = layout;
  }

  int64_t last_read_fence() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fence_;
  }

 private:
  int64_t fence_ = 0;
  ShardLayout layout_;
  struct Row {
    std::optional<int64_t> fired_through;
    std::string claim_node;
    EpochMs claim_until = 0;
    std::set<int64_t> debt;
    std::string debt_node;
    EpochMs debt_until = 0;
  };
  mutable std::mutex mu_;
  std::map<int32_t, Row> rows_;
  bool fail_releases_ = false;
  Clock& clock_;
};

}  // namespace belfry
