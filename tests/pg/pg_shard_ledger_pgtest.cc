#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/connection>
#include <pqxx/transaction>

#include "migrated_database_test.h"
#include "core/shard_layout.h"
#include "pg/pg_shard_ledger.h"

namespace belfry {
namespace {

constexpr int32_t kShardCount = 120;
constexpr int64_t kLeaseMs = 30'000;

class PgShardLedgerTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    ledger_ = std::make_unique<PgShardLedger>(db().url());
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

  // Waits (up to 10 s) until the database's clock has passed the lease expiry `until_column`
  // (claim_until or debt_until) stored for `shard`: leases are judged by that clock.
  bool WaitForLeaseToLapse(int32_t shard, const std::string& until_column) {
    const std::string sql = "SELECT COALESCE(" + until_column + " <= now(), true) FROM shard_state WHERE shard = " +
                            std::to_string(shard);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!db().Exec(sql)[0][0].as<bool>()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

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
  for (int n = 0; n < kNodes; ++n) ledgers.push_back(std::make_unique<PgShardLedger>(db().url()));
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
  // A 2 s lease: node-b's claim must come while node-a's is live. With 200 ms it once came after
  // the lease had lapsed on the Citus cluster of a loaded CI run (clean clone, 2026-11-30).
  EXPECT_TRUE(Claim(3, 10, "node-a", 2000).claimed);
  EXPECT_FALSE(Claim(3, 10, "node-b", 2000).claimed);
  ASSERT_TRUE(WaitForLeaseToLapse(3, "claim_until"));
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
      db().Exec("SELECT floor(extract(epoch FROM now()) * 1000)::bigint")[0][0].as<int64_t>();
  const ShardState s = State(6);
  ASSERT_TRUE(s.claim_until.has_value());
  EXPECT_NEAR(static_cast<double>(*s.claim_until - db_now_ms), 10'000.0, 2'000.0);
}

TEST_F(PgShardLedgerTest, ShardWithoutARowIsAFailedPrecondition) {
  StatusOr<ShardClaim> c = ledger_->Claim(kShardCount + 5, 10, "node-a", kLeaseMs);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kFailedPrecondition);
}

// ---- Catch-up debt (issue 17, docs/catch-up.md) ----------------------------------------------

TEST_F(PgShardLedgerTest, AdvanceMovesTheWatermarkAndAddsTheDebtInOneStep) {
  db().Exec("UPDATE shard_state SET fired_through = 80 WHERE shard = 10");
  ASSERT_TRUE(Claim(10, 100, "node-a").claimed);
  ASSERT_TRUE(ledger_->Advance(10, 100, MinuteRange{86, 98}, "node-a").ok());  // 81..85 too old
  ShardState s = State(10);
  EXPECT_EQ(s.fired_through, 100);
  EXPECT_EQ(s.debt_minutes, 13);
  EXPECT_EQ(s.debt_first, 86);
  EXPECT_EQ(s.claim_node, "");  // released
  EXPECT_EQ(db().Exec("SELECT debt::text FROM shard_state WHERE shard = 10")[0][0].as<std::string>(),
            "{[86,99)}");

  // Without the claim nothing changes: neither the watermark nor the debt.
  const Status lost = ledger_->Advance(10, 110, MinuteRange{101, 109}, "node-a");
  EXPECT_EQ(lost.code(), Status::Code::kFailedPrecondition);
  s = State(10);
  EXPECT_EQ(s.fired_through, 100);
  EXPECT_EQ(s.debt_minutes, 13);

  // A later outage adds a second range; an adjacent one merges; no debt is a no-op.
  ASSERT_TRUE(Claim(10, 120, "node-b").claimed);
  ASSERT_TRUE(ledger_->Advance(10, 120, MinuteRange{110, 118}, "node-b").ok());
  ASSERT_TRUE(Claim(10, 121, "node-b").claimed);
  ASSERT_TRUE(ledger_->Advance(10, 121, MinuteRange{}, "node-b").ok());
  EXPECT_EQ(db().Exec("SELECT debt::text FROM shard_state WHERE shard = 10")[0][0].as<std::string>(),
            "{[86,99),[110,119)}");
  ASSERT_TRUE(Claim(10, 122, "node-b").claimed);
  ASSERT_TRUE(ledger_->Advance(10, 122, MinuteRange{119, 120}, "node-b").ok());
  EXPECT_EQ(State(10).debt_minutes, 13 + 11);
}

TEST_F(PgShardLedgerTest, DebtIsClaimedLowestRangeFirstAndSettledUnderItsOwnLease) {
  db().Exec("UPDATE shard_state SET fired_through = 200, debt = '{[150,160),[170,175)}' WHERE shard = 11");
  // The on-time claim and the debt lease are independent.
  ASSERT_TRUE(Claim(11, 201, "node-b").claimed);
  StatusOr<DebtClaim> d = ledger_->ClaimDebt(11, "node-a", kLeaseMs);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE(d->claimed);
  EXPECT_EQ(d->lowest.first, 150);
  EXPECT_EQ(d->lowest.last, 159);
  EXPECT_EQ(d->owed_minutes, 15);
  ShardState s = State(11);
  EXPECT_EQ(s.debt_node, "node-a");
  EXPECT_TRUE(s.debt_live);
  EXPECT_TRUE(s.claim_live);  // node-b's claim is untouched
  // Nobody else gets the debt while the lease is live; its holder may renew.
  EXPECT_FALSE(ledger_->ClaimDebt(11, "node-b", kLeaseMs)->claimed);
  EXPECT_TRUE(ledger_->RenewDebt(11, "node-a", kLeaseMs).ok());
  EXPECT_EQ(ledger_->RenewDebt(11, "node-b", kLeaseMs).code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(ledger_->SettleDebt(11, MinuteRange{150, 150}, "node-b").code(),
            Status::Code::kFailedPrecondition);
  // node-b's on-time firing completes meanwhile: its new debt and node-a's settlement both stand.
  ASSERT_TRUE(ledger_->Advance(11, 210, MinuteRange{201, 205}, "node-b").ok());
  ASSERT_TRUE(ledger_->SettleDebt(11, MinuteRange{150, 150}, "node-a").ok());
  EXPECT_EQ(db().Exec("SELECT debt::text FROM shard_state WHERE shard = 11")[0][0].as<std::string>(),
            "{[151,160),[170,175),[201,206)}");
  s = State(11);
  EXPECT_EQ(s.debt_node, "");  // settled and released
  EXPECT_FALSE(s.debt_live);
  EXPECT_EQ(s.debt_first, 151);
  EXPECT_EQ(s.debt_minutes, 19);
  d = ledger_->ClaimDebt(11, "node-b", kLeaseMs);
  ASSERT_TRUE(d->claimed);
  EXPECT_EQ(d->lowest.first, 151);
  ASSERT_TRUE(ledger_->SettleDebt(11, d->lowest, "node-b").ok());
  d = ledger_->ClaimDebt(11, "node-b", kLeaseMs);
  EXPECT_EQ(d->lowest.first, 170);
  EXPECT_EQ(d->lowest.last, 174);
  ASSERT_TRUE(ledger_->ReleaseDebt(11, "node-b").ok());
  EXPECT_FALSE(State(11).debt_live);
  for (int i = 0; i < 2; ++i) {
    d = ledger_->ClaimDebt(11, "node-a", kLeaseMs);
    ASSERT_TRUE(d->claimed);
    ASSERT_TRUE(ledger_->SettleDebt(11, d->lowest, "node-a").ok());
  }
  EXPECT_EQ(State(11).debt_minutes, 0);
  EXPECT_FALSE(ledger_->ClaimDebt(11, "node-a", kLeaseMs)->claimed);  // nothing owed
}

TEST_F(PgShardLedgerTest, AnExpiredDebtLeaseMovesToAnotherNodeAndTheOldHolderCannotSettle) {
  db().Exec("UPDATE shard_state SET fired_through = 50, debt = '{[40,45)}' WHERE shard = 12");
  ASSERT_TRUE(ledger_->ClaimDebt(12, "node-a", 200)->claimed);
  ASSERT_TRUE(WaitForLeaseToLapse(12, "debt_until"));
  EXPECT_FALSE(State(12).debt_live);
  ASSERT_TRUE(ledger_->ClaimDebt(12, "node-b", kLeaseMs)->claimed);
  EXPECT_EQ(ledger_->SettleDebt(12, MinuteRange{40, 40}, "node-a").code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE(ledger_->ReleaseDebt(12, "node-a").ok());  // not the holder: a no-op
  EXPECT_EQ(State(12).debt_node, "node-b");
  EXPECT_EQ(State(12).debt_minutes, 5);
}

TEST_F(PgShardLedgerTest, RacingNodesNeverGetTheSameDebtChunk) {
  constexpr int kNodes = 6;
  db().Exec("UPDATE shard_state SET fired_through = 1000, debt = '{[980,1000)}' WHERE shard < 20");
  std::vector<std::unique_ptr<PgShardLedger>> ledgers;
  for (int n = 0; n < kNodes; ++n) ledgers.push_back(std::make_unique<PgShardLedger>(db().url()));
  std::mutex mu;
  std::map<std::pair<int32_t, int64_t>, int> paid;  // (shard, minute) -> times settled
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int n = 0; n < kNodes; ++n) {
    threads.emplace_back([&, n] {
      PgShardLedger& l = *ledgers[static_cast<size_t>(n)];
      const std::string node = "node-" + std::to_string(n);
      for (int round = 0; round < 400; ++round) {
        const int32_t shard = (round * 7 + n) % 20;
        StatusOr<DebtClaim> d = l.ClaimDebt(shard, node, kLeaseMs);
        if (!d.ok()) {
          ++errors;
          continue;
        }
        if (!d->claimed) continue;
        const MinuteRange chunk{d->lowest.first, d->lowest.first};  // fire_all: one minute
        {
          std::lock_guard<std::mutex> lock(mu);
          ++paid[{shard, chunk.first}];
        }
        if (!l.SettleDebt(shard, chunk, node).ok()) ++errors;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  for (const auto& [key, times] : paid)
    EXPECT_EQ(times, 1) << "shard " << key.first << " minute " << key.second;
  int64_t owed = 0;
  for (int32_t s = 0; s < 20; ++s) owed += State(s).debt_minutes;
  EXPECT_EQ(static_cast<int64_t>(paid.size()) + owed, 20 * 20);  // nothing lost either
}

// A claim whose shard_state row stays locked (Citus's block_writes shard move holds it for the
// move; here another transaction's FOR UPDATE, on Citus held on the worker) gives up after the
// ledger's lock timeout with a Retryable status naming the shard, while the other shards claim.
// Once the lock is gone the shard claims again. Without it, every firing worker that reached a
// moved shard waited for the whole move (docs/scale-out.md).
TEST_F(PgShardLedgerTest, AClaimGivesUpOnARowLockedPastTheLockTimeoutAndTheOtherShardsClaim) {
  PgShardLedger ledger(db().url(), /*claim_lock_timeout_ms=*/200);
  // Shard 7 owes minutes 90..95, so that its debt claim has a row to wait for.
  ASSERT_TRUE(ledger.Claim(7, 100, "node-a", kLeaseMs).ok());
  ASSERT_TRUE(ledger.Advance(7, 100, MinuteRange{90, 95}, "node-a").ok());

  pqxx::connection holder(db().url());
  auto hold = std::make_unique<pqxx::work>(holder);
  hold->exec("SELECT shard FROM shard_state WHERE shard = 7 FOR UPDATE");
  // Each call on a thread of its own: a call that waits for the lock is failed, not hung on.
  auto within = [&](auto call) {
    auto f = std::async(std::launch::async, call);
    if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << "the call still waits for the lock after 20 s: releasing it";
      hold.reset();
    }
    return f.get();
  };
  const StatusOr<ShardClaim> blocked = within([&] { return ledger.Claim(7, 101, "node-b", kLeaseMs); });
  ASSERT_FALSE(blocked.ok());
  EXPECT_TRUE(blocked.status().retryable()) << blocked.status().ToString();
  EXPECT_NE(blocked.status().ToString().find("claim shard 7:"), std::string::npos) << blocked.status().ToString();
  EXPECT_NE(blocked.status().ToString().find("claim_lock_timeout"), std::string::npos);
  const StatusOr<DebtClaim> debt_blocked = within([&] { return ledger.ClaimDebt(7, "node-b", kLeaseMs); });
  ASSERT_FALSE(debt_blocked.ok());
  EXPECT_TRUE(debt_blocked.status().retryable()) << debt_blocked.status().ToString();
  EXPECT_NE(debt_blocked.status().ToString().find("claim debt of shard 7:"), std::string::npos);

  // The other shards claim meanwhile, through the same ledger (its connection was reopened).
  const StatusOr<ShardClaim> other = within([&] { return ledger.Claim(8, 101, "node-b", kLeaseMs); });
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_TRUE(other->claimed);
  EXPECT_EQ(State(7).claim_node, "");  // the claims that gave up wrote nothing
  EXPECT_TRUE(State(7).debt_node.empty());

  hold.reset();  // the lock is released: the shard claims again
  const StatusOr<ShardClaim> again = ledger.Claim(7, 101, "node-b", kLeaseMs);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->claimed);
  EXPECT_EQ(again->fired_through, 100);
  const StatusOr<DebtClaim> debt = ledger.ClaimDebt(7, "node-b", kLeaseMs);
  ASSERT_TRUE(debt.ok()) << debt.status().ToString();
  EXPECT_TRUE(debt->claimed);
  EXPECT_EQ(debt->lowest.first, 90);
}

// Issue 33 §4: the admin API's and the CLI's views read the layout record through ReadLayout,
// as it stands: after `belfry reshard --to 240`'s cut-over, whatever the node's configured count.
TEST_F(PgShardLedgerTest, ReadLayoutReturnsTheRecordAsItStands) {
  StatusOr<ShardLayout> read = ledger_->ReadLayout();
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, ShardLayout{});  // migrated with 120: stable at 120
  ShardLayout cutover{120, 240, ShardLayout::Phase::kCutover, 119, 29'000'000};
  db().Exec("UPDATE belfry_meta SET value = '" + EncodeShardLayout(cutover) + "' WHERE key = 'layout'");
  read = ledger_->ReadLayout();
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, cutover);
  EXPECT_EQ(MaxFiringShards(*read), 240);
}

}  // namespace
}  // namespace belfry
