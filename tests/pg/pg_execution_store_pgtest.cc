// PgExecutionStore on the real server: dedupe, counters, keyset pages, the daily partitions and
// their sweep.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "migrated_database_test.h"
#include "pg/pg_execution_store.h"

namespace belfry {
namespace {

ExecutionReport Report(const std::string& job, EpochMs sf, int32_t attempt, ExecutionStatus s,
                       int64_t offset) {
  ExecutionReport r;
  r.job_id = job;
  r.scheduled_for_ms = sf;
  r.attempt = attempt;
  r.status = s;
  if (s == ExecutionStatus::kFailed) r.error.append("boom");  // not `= "boom"`: GCC 12's false -Wrestrict
  r.finished_at = sf + 500;
  r.worker.push_back('w');
  r.source = SourcePosition{0, offset, 0};
  return r;
}

class PgExecutionStoreTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgExecutionStore>(db().url(), RetryRules{}, clock_);
  }
  FakeClock clock_{1'700'000'000'000};
  std::unique_ptr<PgExecutionStore> store_;
};

constexpr auto kOk = ExecutionStatus::kSucceeded;
constexpr auto kFail = ExecutionStatus::kFailed;
constexpr auto kRun = ExecutionStatus::kRunning;

TEST_F(PgExecutionStoreTest, DuplicatesAreStoredAndCountedOnce) {
  const std::vector<ExecutionReport> batch = {
      Report("a", 60'000, 0, kRun, 1), Report("a", 60'000, 0, kFail, 2), Report("a", 60'000, 0, kFail, 3),
      Report("b", 60'000, 0, kOk, 4)};
  ASSERT_TRUE(store_->ApplyReports(batch).ok());
  ASSERT_TRUE(store_->ApplyReports(batch).ok());  // a replay
  EXPECT_EQ(db().Exec("SELECT count(*) FROM executions")[0][0].as<int>(), 3);
  auto a = store_->GetJobStats("a");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->total_failed, 1);
  EXPECT_EQ((*a)->consecutive_failures, 1);
  EXPECT_EQ(*(*a)->last_status, kFail);
  EXPECT_EQ((*a)->last_error, "boom");
  ASSERT_TRUE(store_->ApplyReports({Report("a", 120'000, 0, kFail, 5)}).ok());
  EXPECT_EQ((*store_->GetJobStats("a"))->consecutive_failures, 2);
  ASSERT_TRUE(store_->ApplyReports({Report("a", 180'000, 0, kOk, 6)}).ok());
  const JobStats s = **store_->GetJobStats("a");
  EXPECT_EQ(s.consecutive_failures, 0);
  EXPECT_EQ(s.total_succeeded, 1);
  EXPECT_EQ(s.total_failed, 2);
  EXPECT_EQ(*s.last_finished_at, 180'500);
  EXPECT_FALSE(store_->GetJobStats("nobody")->has_value());
}

TEST_F(PgExecutionStoreTest, HistoryPaginatesNewestFirst) {
  std::vector<ExecutionReport> batch;
  for (int i = 0; i < 25; ++i)
    batch.push_back(Report("p", 60'000 * (i + 1), i % 2, i % 3 == 0 ? kFail : kOk, i));
  batch.push_back(Report("other", 60'000, 0, kOk, 99));
  ASSERT_TRUE(store_->ApplyReports(batch).ok());
  std::vector<EpochMs> seen;
  std::string cursor;
  int pages = 0;
  do {
    auto page = store_->ListExecutions("p", 10, cursor);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const ExecutionRecord& r : page->records) {
      EXPECT_EQ(r.report.job_id, "p");
      EXPECT_GT(r.received_at, 0);
      seen.push_back(r.report.scheduled_for_ms);
    }
    cursor = page->next_cursor;
    ++pages;
  } while (!cursor.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 25u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i - 1], seen[i]);
  EXPECT_FALSE(store_->ListExecutions("p", 10, "garbage").ok());
  EXPECT_EQ(store_->ListExecutions("p", 10, "garbage").status().code(), Status::Code::kInvalid);
}

constexpr int64_t kDayMs = 86'400'000;

// The partition each stored report of `job` is in, by scheduledFor: each partition of executions
// read by name (not tableoid, which on Citus names the worker's shard of the partition).
std::map<EpochMs, std::string> PartitionsOf(PgTestDatabase& db, const std::string& job) {
  std::map<EpochMs, std::string> out;
  for (const auto& partition : db.Exec("SELECT inhrelid::regclass::text FROM pg_inherits"
                                       " WHERE inhparent = 'executions'::regclass")) {
    const std::string name = partition[0].as<std::string>();
    for (const auto& row : db.Exec("SELECT scheduled_for_ms FROM " + name + " WHERE job_id = '" + job + "'")) {
      out[row[0].as<int64_t>()] = name;
    }
  }
  return out;
}

TEST_F(PgExecutionStoreTest, HistoryIsKeptInDailyPartitionsDroppedWhole) {
  // clock_ starts at 2023-11-14T22:13:20Z: day 19675 since the epoch.
  const EpochMs today = clock_.NowMs() / kDayMs * kDayMs;
  // Before any sweep every report lands in executions_default.
  const std::vector<ExecutionReport> batch = {
      Report("h", today + 1000, 0, kOk, 1), Report("h", today - 2 * kDayMs, 0, kFail, 2),
      Report("h", today - 10 * kDayMs, 0, kOk, 3), Report("h", today + 30 * kDayMs, 0, kOk, 4)};
  ASSERT_TRUE(store_->ApplyReports(batch).ok());
  for (const auto& [sf, partition] : PartitionsOf(db(), "h"))
    EXPECT_EQ(partition, "executions_default") << sf;

  auto swept = store_->MaintainPartitions(7 * kDayMs, 3);
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(swept->created, 11);  // days D-7 .. D+3
  EXPECT_EQ(swept->dropped, 0);
  EXPECT_EQ(swept->default_rows_deleted, 1);  // the report of day D-10, past the retention
  std::map<EpochMs, std::string> where = PartitionsOf(db(), "h");
  ASSERT_EQ(where.size(), 3u);
  EXPECT_EQ(where[today + 1000], "executions_20231114");
  EXPECT_EQ(where[today - 2 * kDayMs], "executions_20231112");
  EXPECT_EQ(where[today + 30 * kDayMs], "executions_default");  // beyond the days created ahead

  // Repeats still meet their first copy: stored and counted once.
  auto again = store_->ApplyReports(batch);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stored, 1);  // only the D-10 report, deleted by the sweep, is new again
  EXPECT_EQ(db().Exec("SELECT count(*) FROM executions WHERE job_id = 'h'")[0][0].as<int>(), 4);
  const JobStats before = **store_->GetJobStats("h");
  EXPECT_EQ(before.total_failed, 1);

  // A second sweep at the same time has nothing to do but the D-10 report again.
  swept = store_->MaintainPartitions(7 * kDayMs, 3);
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(swept->created, 0);
  EXPECT_EQ(swept->dropped, 0);
  EXPECT_EQ(swept->default_rows_deleted, 1);

  // Three days on, days D-7 .. D-5 are wholly older than the retention: dropped whole.
  clock_.Advance(3 * kDayMs);
  swept = store_->MaintainPartitions(7 * kDayMs, 3);
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(swept->dropped, 3);
  EXPECT_EQ(swept->created, 3);
  EXPECT_EQ(db().Exec("SELECT to_regclass('executions_20231107') IS NULL")[0][0].as<bool>(), true);
  EXPECT_EQ(db().Exec("SELECT to_regclass('executions_20231110') IS NOT NULL")[0][0].as<bool>(), true);
  EXPECT_EQ(PartitionsOf(db(), "h").size(), 3u);

  // Day D-2 goes once D-2 + 1 day is more than 7 days ago; the counters stay.
  clock_.Advance(4 * kDayMs);
  swept = store_->MaintainPartitions(7 * kDayMs, 3);
  ASSERT_TRUE(swept.ok());
  where = PartitionsOf(db(), "h");
  EXPECT_EQ(where.count(today - 2 * kDayMs), 0u);
  EXPECT_EQ(where.count(today + 1000), 1u);
  const JobStats after = **store_->GetJobStats("h");
  EXPECT_EQ(after.total_failed, before.total_failed);
  EXPECT_EQ(after.total_succeeded, before.total_succeeded);
  auto page = store_->ListExecutions("h", 100, "");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->records.size(), 2u);
  EXPECT_EQ(page->records[0].report.scheduled_for_ms, today + 30 * kDayMs);
  EXPECT_EQ(page->records[1].report.scheduled_for_ms, today + 1000);
}

TEST_F(PgExecutionStoreTest, AStoredSuccessSupersedesRetriesOnlyWhereTheJobHasFailed) {
  // A job that never failed has no retries to supersede, and the store does not look; one that
  // failed is looked at. Both keep exact counters and the latest success.
  ASSERT_TRUE(
      store_->ApplyReports({Report("never", 60'000, 0, kOk, 1), Report("once", 60'000, 0, kFail, 2)}).ok());
  ASSERT_TRUE(
      store_->ApplyReports({Report("never", 120'000, 0, kOk, 3), Report("once", 120'000, 0, kOk, 4)}).ok());
  const JobStats never = **store_->GetJobStats("never");
  const JobStats once = **store_->GetJobStats("once");
  EXPECT_EQ(never.total_succeeded, 2);
  EXPECT_EQ(*never.last_success_scheduled_for_ms, 120'000);
  EXPECT_EQ(once.total_failed, 1);
  EXPECT_EQ(once.consecutive_failures, 0);
  EXPECT_EQ(*once.last_success_scheduled_for_ms, 120'000);
}

}  // namespace
}  // namespace belfry
