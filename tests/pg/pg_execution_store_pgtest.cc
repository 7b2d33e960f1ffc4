// PgExecutionStore on the real server: dedupe, counters, keyset pages, the trim sweep.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "pg/pg_execution_store.h"
#include "pg_test_database.h"

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

class PgExecutionStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { db_ = PgTestDatabase::CreateMigrated(120, &error_).release(); }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(db_, nullptr) << error_;
    db_->Exec("TRUNCATE executions, job_stats");
    store_ = std::make_unique<PgExecutionStore>(db_->url(), RetryRules{}, clock_);
  }
  static PgTestDatabase* db_;
  static std::string error_;
  FakeClock clock_{1'700'000'000'000};
  std::unique_ptr<PgExecutionStore> store_;
};

PgTestDatabase* PgExecutionStoreTest::db_ = nullptr;
std::string PgExecutionStoreTest::error_;

constexpr auto kOk = ExecutionStatus::kSucceeded;
constexpr auto kFail = ExecutionStatus::kFailed;
constexpr auto kRun = ExecutionStatus::kRunning;

TEST_F(PgExecutionStoreTest, DuplicatesAreStoredAndCountedOnce) {
  const std::vector<ExecutionReport> batch = {
      Report("a", 60'000, 0, kRun, 1), Report("a", 60'000, 0, kFail, 2), Report("a", 60'000, 0, kFail, 3),
      Report("b", 60'000, 0, kOk, 4)};
  ASSERT_TRUE(store_->ApplyReports(batch).ok());
  ASSERT_TRUE(store_->ApplyReports(batch).ok());  // a replay
  EXPECT_EQ(db_->Exec("SELECT count(*) FROM executions")[0][0].as<int>(), 3);
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

TEST_F(PgExecutionStoreTest, TrimKeepsTheNewestPerJob) {
  std::vector<ExecutionReport> batch;
  for (int i = 0; i < 12; ++i) batch.push_back(Report("t", 60'000 * (i + 1), 0, kOk, i));
  for (int i = 0; i < 3; ++i) batch.push_back(Report("u", 60'000 * (i + 1), 0, kOk, 100 + i));
  ASSERT_TRUE(store_->ApplyReports(batch).ok());
  auto n = store_->TrimHistory(5);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 7);
  auto page = store_->ListExecutions("t", 100, "");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->records.size(), 5u);
  EXPECT_EQ(page->records.back().report.scheduled_for_ms, 60'000 * 8);
  EXPECT_EQ(store_->ListExecutions("u", 100, "")->records.size(), 3u);
  EXPECT_EQ((*store_->GetJobStats("t"))->total_succeeded, 12);  // counters survive the trim
}

}  // namespace
}  // namespace belfry
