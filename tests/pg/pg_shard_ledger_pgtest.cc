#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pg/pg_shard_ledger.h"
#include "pg_test_database.h"

namespace belfry {
namespace {

constexpr int32_t kShardCount = 120;
constexpr int64_t kLeaseMs = 30'000;

class PgShardLedgerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { db_ = PgTestDatabase::CreateMigrated(kShardCount, &error_).release(); }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(db_, nullptr) << error_;
    db_->Exec("UPDATE shard_state SET fired_through = NULL, claim_node = NULL, claim_until = NULL");
    ledger_ = std::make_unique<PgShardLedger>(db_->url());
  }

  ShardClaim Claim(int32_t shard, int64_t up_to, const std::string& node, int64_t lease_ms = kLeaseMs) {
    StatusOr<ShardClaim> c = ledger_->Claim(shard, up_to, node, lease_ms);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : ShardClaim{};
  }

  ShardState State(int32_t shard) {
    StatusOr<std::vector<ShardState>> states = ledger_->LoadStates();
    EXPECT_TRUE(states.ok()) << states.status().ToString();
    if (!states.ok() || static_cast<size_t>(shard) >= states->size()) return ShardState{};
    return (*states)[static_cast<size_t>(shard)];
  }

  static inline PgTestDatabase* db_ = nullptr;
  static inline std::string error_;
  std::unique_ptr<PgShardLedger> ledger_;
};

TEST_F(PgShardLedgerTest, ClaimMarkFiredRelease) {
  ShardClaim c = Claim(0, 100, "node-a");
  EXPECT_TRUE(c.claimed);
  EXPECT_EQ(c.fired_through, std::nullopt);
  ShardState s = State(0);
  EXPECT_EQ(s.claim_node, "node-a");
  EXPECT_TRUE(s.claim_live);
  ASSERT_TRUE(s.claim_until.has_value());

  ASSERT_TRUE(ledger_->MarkFired(0, 100, "node-a", kLeaseMs, /*release=*/true).ok());
  s = State(0);
  EXPECT_EQ(s.fired_through, 100);
  EXPECT_EQ(s.claim_node, "");
  EXPECT_EQ(s.claim_until, std::nullopt);
  EXPECT_FALSE(s.claim_live);

  // Already fired through 100: nothing to claim, and the stored watermark comes back.
  c = Claim(0, 100, "node-a");
  EXPECT_FALSE(c.claimed);
  EXPECT_EQ(c.fired_through, 100);
  c = Claim(0, 101, "node-b");
  EXPECT_TRUE(c.claimed);
  EXPECT_EQ(c.fired_through, 100);
}

TEST_F(PgShardLedgerTest, LiveClaimExcludesOthersButNotItsHolder) {
  EXPECT_TRUE(Claim(1, 10, "node-a").claimed);
  EXPECT_FALSE(Claim(1, 10, "node-b").claimed);
  EXPECT_TRUE(Claim(1, 10, "node-a").claimed);  // renewal
  EXPECT_FALSE(Claim(1, 11, "node-b").claimed);
  ASSERT_TRUE(ledger_->Release(1, "node-b").ok());  // not the holder: no-op
  EXPECT_EQ(State(1).claim_node, "node-a");
  ASSERT_TRUE(ledger_->Release(1, "node-a").ok());
  EXPECT_EQ(State(1).claim_node, "");
  EXPECT_TRUE(Claim(1, 10, "node-b").claimed);
}

TEST_F(PgShardLedgerTest, RacingNodesClaimEachShardMinuteOnce) {
  constexpr int kNodes = 8;
  constexpr int kMinutes = 20;
  std::vector<std::unique_ptr<PgShardLedger>> ledgers;
  for (int n = 0; n < kNodes; ++n) ledgers.push_back(std::make_unique<PgShardLedger>(db_->url()));
  for (int minute = 1; minute <= kMinutes; ++minute) {
    std::atomic<int> winners{0};
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int n = 0; n < kNodes; ++n) {
      threads.emplace_back([&, n] {
        const std::string node = "node-" + std::to_string(n);
        StatusOr<ShardClaim> c = ledgers[static_cast<size_t>(n)]->Claim(2, minute, node, kLeaseMs);
        if (!c.ok()) {
          ++errors;
          return;
        }
        if (!c->claimed) return;
        ++winners;
        if (!ledgers[static_cast<size_t>(n)]->MarkFired(2, minute, node, kLeaseMs, true).ok()) ++errors;
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(winners.load(), 1) << "minute " << minute;
    EXPECT_EQ(errors.load(), 0);
  }
  EXPECT_EQ(State(2).fired_through, kMinutes);
}

TEST_F(PgShardLedgerTest, ExpiredLeaseLetsAnotherNodeClaim) {
  EXPECT_TRUE(Claim(3, 10, "node-a", 200).claimed);
  EXPECT_FALSE(Claim(3, 10, "node-b", 200).claimed);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // unavoidable: the lease is wall-clock
  EXPECT_FALSE(State(3).claim_live);
  EXPECT_TRUE(Claim(3, 10, "node-b", kLeaseMs).claimed);

  const Status lost = ledger_->MarkFired(3, 10, "node-a", kLeaseMs, false);
  EXPECT_EQ(lost.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(lost.message().find("claim lost"), std::string::npos) << lost.message();
  EXPECT_EQ(State(3).fired_through, std::nullopt);
  EXPECT_TRUE(ledger_->MarkFired(3, 10, "node-b", kLeaseMs, true).ok());
  EXPECT_EQ(State(3).fired_through, 10);
}

TEST_F(PgShardLedgerTest, FiredThroughNeverMovesBackwards) {
  ASSERT_TRUE(Claim(4, 60, "node-a").claimed);
  ASSERT_TRUE(ledger_->MarkFired(4, 50, "node-a", kLeaseMs, false).ok());
  ASSERT_TRUE(ledger_->MarkFired(4, 40, "node-a", kLeaseMs, false).ok());  // a lease renewal
  ShardState s = State(4);
  EXPECT_EQ(s.fired_through, 50);
  EXPECT_EQ(s.claim_node, "node-a");  // renewed, not released
  EXPECT_TRUE(s.claim_live);
  ASSERT_TRUE(ledger_->MarkFired(4, 60, "node-a", kLeaseMs, true).ok());
  EXPECT_EQ(State(4).fired_through, 60);
}

TEST_F(PgShardLedgerTest, MarkFiredWithoutAClaimFails) {
  EXPECT_EQ(ledger_->MarkFired(5, 10, "node-a", kLeaseMs, true).code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(State(5).fired_through, std::nullopt);
}

TEST_F(PgShardLedgerTest, LoadStatesListsEveryShardInOrder) {
  StatusOr<std::vector<ShardState>> states = ledger_->LoadStates();
  ASSERT_TRUE(states.ok()) << states.status().ToString();
  ASSERT_EQ(states->size(), static_cast<size_t>(kShardCount));
  for (int32_t i = 0; i < kShardCount; ++i) EXPECT_EQ((*states)[static_cast<size_t>(i)].shard, i);
}

TEST_F(PgShardLedgerTest, LeaseIsMeasuredByTheDatabaseClock) {
  ASSERT_TRUE(Claim(6, 10, "node-a", 10'000).claimed);
  const int64_t db_now_ms =
      db_->Exec("SELECT floor(extract(epoch FROM now()) * 1000)::bigint")[0][0].as<int64_t>();
  const ShardState s = State(6);
  ASSERT_TRUE(s.claim_until.has_value());
  EXPECT_NEAR(static_cast<double>(*s.claim_until - db_now_ms), 10'000.0, 2'000.0);
}

TEST_F(PgShardLedgerTest, ShardWithoutARowIsAFailedPrecondition) {
  StatusOr<ShardClaim> c = ledger_->Claim(kShardCount + 5, 10, "node-a", kLeaseMs);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace belfry
