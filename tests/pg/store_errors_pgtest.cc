// Which store errors are permanent (the data is refused: isolate the record) and which are
// retried (docs/reliability.md, "Poison commands and reports"), on the real server.
#include <gtest/gtest.h>

#include <memory>
#include <new>
#include <pqxx/except>
#include <string>
#include <vector>

#include "core/batch_bisection.h"
#include "fakes/fake_clock.h"
#include "labelled_job_action.h"
#include "migrated_database_test.h"
#include "pg/pg_execution_store.h"
#include "pg/pg_job_store.h"
#include "pg/pg_status.h"

namespace belfry {
namespace {

TEST(StoreErrorClassTest, DataErrorsArePermanentFaultsAreRetriedTheRestIsAPrecondition) {
  const auto of = [](const char* sqlstate) { return StatusFromSqlState(sqlstate, "ctx", "m").code(); };
  EXPECT_EQ(of("P0001"), Status::Code::kInvalid);  // RAISE EXCEPTION
  EXPECT_EQ(of("22001"), Status::Code::kInvalid);  // string data right truncation
  EXPECT_EQ(of("23505"), Status::Code::kInvalid);  // unique violation
  EXPECT_EQ(of("40001"), Status::Code::kRetryable);  // serialization failure
  EXPECT_EQ(of("40P01"), Status::Code::kRetryable);  // deadlock
  EXPECT_EQ(of("08006"), Status::Code::kRetryable);  // connection failure
  EXPECT_EQ(of("57P01"), Status::Code::kRetryable);  // admin shutdown
  EXPECT_EQ(of(""), Status::Code::kRetryable);       // no answer: the connection broke
  // A row routed to the default partition while the sweep creates its day's partition: a race.
  EXPECT_EQ(StatusFromSqlState("23514", "ctx",
                               "ERROR:  new row for relation \"executions_default\" violates partition constraint")
                .code(),
            Status::Code::kRetryable);
  EXPECT_EQ(StatusFromSqlState("23514", "ctx", "violates check constraint \"jobs_interval\"").code(),
            Status::Code::kInvalid);
  EXPECT_EQ(of("42P01"), Status::Code::kFailedPrecondition);  // undefined table: not migrated
  EXPECT_EQ(of("25006"), Status::Code::kFailedPrecondition);  // read-only transaction
  EXPECT_EQ(of("0A000"), Status::Code::kFailedPrecondition);  // unknown classes are not the data's fault
  EXPECT_EQ(StatusFromException(std::bad_alloc(), "ctx").code(), Status::Code::kRetryable);
  EXPECT_EQ(StatusFromException(pqxx::broken_connection("gone"), "ctx").code(), Status::Code::kRetryable);
  EXPECT_EQ(StatusFromException(pqxx::sql_error("lost", "SELECT 1"), "ctx").code(), Status::Code::kRetryable);
  EXPECT_EQ(StatusFromException(pqxx::usage_error("bug"), "ctx").code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(StatusFromException(std::runtime_error("?"), "ctx").code(), Status::Code::kFailedPrecondition);
}

class StoreErrorsTest : public MigratedDatabaseTest {
 protected:
  void TearDown() override {
    db().Exec("DROP TRIGGER IF EXISTS refuse_poison ON jobs");
    db().Exec("DROP TRIGGER IF EXISTS refuse_poison ON executions");
    db().Exec("DROP FUNCTION IF EXISTS refuse_poison()");
  }
  // A test-only trigger on `table` that raises for rows whose `column` is 'poison'.
  void RefusePoison(const std::string& table, const std::string& column) {
    db().Exec("CREATE OR REPLACE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
              "IF NEW." + column + " = 'poison' THEN RAISE EXCEPTION 'refusing %', NEW." + column +
              "; END IF; RETURN NEW; END $$");
    db().Exec("CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON " + table +
              " FOR EACH ROW EXECUTE FUNCTION refuse_poison()");
  }
};

TEST_F(StoreErrorsTest, ARefusedJobIsAPermanentErrorAndBisectionAppliesTheRest) {
  RefusePoison("jobs", "id");
  PgJobStore store(db().url());
  std::vector<JobAction> actions;
  for (int i = 0; i < 9; ++i) {
    const std::string id = i == 6 ? "poison" : "good-" + std::to_string(i);
    actions.push_back(LabelledJobAction(id, "o", "", i, kMigratedShardCount));
  }
  const Status whole = store.ApplyActions(actions);
  ASSERT_EQ(whole.code(), Status::Code::kInvalid) << whole.ToString();
  EXPECT_NE(whole.message().find("refusing poison"), std::string::npos) << whole.message();

  const BisectionResult r = ApplyIsolatingRefusals(actions.size(), [&](size_t first, size_t last) {
    return std::optional<Status>(
        store.ApplyActions(std::vector<JobAction>(actions.begin() + first, actions.begin() + last)));
  });
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.refused[0].index, 6u);
  EXPECT_EQ(db().Exec("SELECT count(*) FROM jobs")[0][0].as<int>(), 8);
  EXPECT_EQ(db().Exec("SELECT count(*) FROM jobs WHERE id = 'poison'")[0][0].as<int>(), 0);
}

TEST_F(StoreErrorsTest, ARefusedReportIsAPermanentError) {
  RefusePoison("executions", "job_id");
  FakeClock clock{1'700'000'000'000};
  PgExecutionStore store(db().url(), RetryRules{}, clock);
  std::vector<ExecutionReport> reports(2);
  reports[0].job_id = "fine";
  reports[1].job_id = "poison";
  for (ExecutionReport& r : reports) {
    r.scheduled_for_ms = 60'000;
    r.status = ExecutionStatus::kSucceeded;
  }
  const StatusOr<ExecutionApplyResult> whole = store.ApplyReports(reports);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.status().code(), Status::Code::kInvalid) << whole.status().ToString();
  EXPECT_TRUE(store.ApplyReports({reports[0]}).ok());
}

}  // namespace
}  // namespace belfry
