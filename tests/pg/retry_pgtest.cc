// Retries in the PostgreSQL stores: a failed report schedules the next attempt as a one-shot row
// the tick query finds; repeats, the attempt limit, supersession by a success, lateness, pause,
// delete and placement behind a shard's watermark or live claim.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/retry_policy.h"
#include "core/shard_layout.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "fakes/fake_clock.h"
#include "migrated_database_test.h"
#include "pg/pg_execution_store.h"
#include "pg/pg_job_store.h"

namespace belfry {
namespace {

constexpr int64_t kTickMs = 500;
// Jobs live in the shard of their id (the command parser sets it so, and the store relies on it).
const int32_t kShard = ShardForId("j", 120);
constexpr int64_t kMinute = 29'000'260;  // 2025-02-20
const EpochMs kNow = kMinute * 60'000 + 20'000;
const EpochMs kSlot = SlotMs(kMinute, kShard, kTickMs);  // the failed run's scheduledFor

// An id other than "j" in j's shard.
std::string SiblingOfJ() {
  for (int i = 0;; ++i) {
    std::string id = "k" + std::to_string(i);
    if (ShardForId(id, 120) == kShard) return id;
  }
}
const std::string kK = SiblingOfJ();

JobAction Job(const std::string& id, int32_t max_retries, int64_t src_offset) {
  JobAction a;
  a.id = id;
  a.spec.id = id;
  a.spec.interval_minutes = 15;
  a.spec.offset_minutes = 14;  // due at kMinute + 4: not in the minutes the retries fire
  a.spec.offset_explicit = true;
  a.spec.shard = ShardForId(id, 120);
  a.spec.topic = "orders.poll";
  a.spec.details_json = R"({"n":1})";
  a.spec.max_retries = max_retries;
  a.spec.retry_backoff = RetryBackoff{60'000, 2.0, 600'000};
  a.source = SourcePosition{0, src_offset, 0};
  return a;
}

ExecutionReport Failed(const std::string& job, EpochMs slot, int32_t attempt, EpochMs finished,
                       int64_t offset) {
  ExecutionReport r;
  r.job_id = job;
  r.scheduled_for_ms = slot;
  r.attempt = attempt;
  r.status = ExecutionStatus::kFailed;
  r.error.append("HTTP 503");
  r.finished_at = finished;
  r.source = SourcePosition{0, offset, finished};
  return r;
}

ExecutionReport Succeeded(const std::string& job, EpochMs slot, int32_t attempt, int64_t offset) {
  ExecutionReport r = Failed(job, slot, attempt, slot + 1000, offset);
  r.status = ExecutionStatus::kSucceeded;
  r.error.clear();
  return r;
}

struct RetryRow {
  std::string id;
  int64_t run_minute;
  EpochMs scheduled_for_ms;
  int32_t attempt;
  std::string retry_of;
  std::string key;
  int32_t interval;
};

class PgRetryTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    jobs_ = std::make_unique<PgJobStore>(db().url());
    RetryRules rules;
    rules.layout = ShardLayout{static_cast<int32_t>(60'000 / kTickMs)};
    executions_ = std::make_unique<PgExecutionStore>(db().url(), rules, clock_);
  }

  void Apply(const std::vector<JobAction>& actions) { ASSERT_TRUE(jobs_->ApplyActions(actions).ok()); }

  ExecutionApplyResult Report(const std::vector<ExecutionReport>& reports) {
    StatusOr<ExecutionApplyResult> r = executions_->ApplyReports(reports);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : ExecutionApplyResult{};
  }

  std::vector<RetryRow> Retries() {
    std::vector<RetryRow> out;
    for (const auto& row : db().Exec("SELECT id, run_minute, scheduled_for_ms, attempt, retry_of, key, "
                                     "interval_minutes FROM jobs WHERE retry_of IS NOT NULL ORDER BY id")) {
      out.push_back(RetryRow{row[0].as<std::string>(), row[1].as<int64_t>(), row[2].as<int64_t>(),
                             row[3].as<int32_t>(), row[4].as<std::string>(), row[5].as<std::string>(),
                             row[6].as<int32_t>()});
    }
    return out;
  }

  // The ids the tick query returns for (kShard, minute).
  std::vector<std::string> Due(int64_t minute) {
    DueQuery q{kShard, minute, minute, kTickMs, TermsForMinute({1, 5, 15}, minute)};
    std::vector<std::string> ids;
    const Status st = jobs_->ForEachDueJob(q, [&](const DueJob& j) {
      ids.push_back(std::string(j.id));
      EXPECT_EQ(j.scheduled_for_ms, kSlot);
      EXPECT_EQ(j.interval_minutes, 15);
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return ids;
  }

  FakeClock clock_{kNow};
  std::unique_ptr<PgJobStore> jobs_;
  std::unique_ptr<PgExecutionStore> executions_;
};

TEST_F(PgRetryTest, FailureSchedulesTheNextAttemptWhereTheTickQueryFindsIt) {
  Apply({Job("j", 3, 1)});
  const EpochMs failed_at = kSlot + 4'000;
  const ExecutionApplyResult r = Report({Failed("j", kSlot, 0, failed_at, 10)});
  EXPECT_EQ(r.stored, 1);
  EXPECT_EQ(r.retries_scheduled, 1);
  const std::vector<RetryRow> rows = Retries();
  ASSERT_EQ(rows.size(), 1u);
  const int64_t minute = FirstLayoutMinuteAtOrAfter(ShardLayout{}, failed_at + 60'000, kShard);
  ASSERT_EQ(minute, kMinute + 2);
  EXPECT_EQ(rows[0].id, RetryRowId("j", kSlot, 1));
  EXPECT_EQ(rows[0].run_minute, minute);
  EXPECT_GE(SlotMs(minute, kShard, kTickMs), failed_at + 60'000);
  EXPECT_EQ(rows[0].scheduled_for_ms, kSlot);
  EXPECT_EQ(rows[0].attempt, 1);
  EXPECT_EQ(rows[0].retry_of, "j");
  EXPECT_EQ(rows[0].key, "j");  // the job's trigger key (its id: it has no key)
  EXPECT_EQ(rows[0].interval, 15);
  EXPECT_EQ(Due(minute), std::vector<std::string>{RetryRowId("j", kSlot, 1)});
  EXPECT_TRUE(Due(minute + 1).empty());

  // The retry fails too: attempt 2, after 2 minutes of backoff.
  const EpochMs second_failure = SlotMs(minute, kShard, kTickMs) + 3'000;
  EXPECT_EQ(Report({Failed("j", kSlot, 1, second_failure, 11)}).retries_scheduled, 1);
  const int64_t minute2 = FirstLayoutMinuteAtOrAfter(ShardLayout{}, second_failure + 120'000, kShard);
  ASSERT_EQ(minute2, kMinute + 5);
  EXPECT_EQ(Due(minute2), std::vector<std::string>{RetryRowId("j", kSlot, 2)});
}

TEST_F(PgRetryTest, DuplicateReportsScheduleOneRetry) {
  Apply({Job("j", 3, 1)});
  const ExecutionReport f = Failed("j", kSlot, 0, kSlot + 4'000, 10);
  ExecutionReport again = f;
  again.source.offset = 11;
  again.worker = "another-worker";
  EXPECT_EQ(Report({f, again}).retries_scheduled, 1);
  EXPECT_EQ(Report({again}).retries_scheduled, 0);  // redelivered later
  // Even once the history no longer has it (trimmed), the retry row's id keeps it single.
  db().Exec("TRUNCATE executions");
  EXPECT_EQ(Report({f}).retries_scheduled, 0);
  EXPECT_EQ(Retries().size(), 1u);
}

TEST_F(PgRetryTest, NoRetryBeyondMaxRetriesOrWithoutRetries) {
  Apply({Job("j", 2, 1), Job("none", 0, 2)});
  EXPECT_EQ(Report({Failed("j", kSlot, 2, kSlot + 4'000, 10)}).retries_scheduled, 0);
  EXPECT_EQ(Report({Failed("none", kSlot, 0, kSlot + 4'000, 11)}).retries_scheduled, 0);
  EXPECT_EQ(Report({Failed("missing", kSlot, 0, kSlot + 4'000, 12)}).retries_scheduled, 0);
  EXPECT_EQ(Report({Failed("j", kSlot, 1, kSlot + 4'000, 13)}).retries_scheduled, 1);
  ASSERT_EQ(Retries().size(), 1u);
  EXPECT_EQ(Retries()[0].attempt, 2);
}

TEST_F(PgRetryTest, ALaterSuccessSupersedesPendingAndFutureRetries) {
  Apply({Job("j", 5, 1)});
  ASSERT_EQ(Report({Failed("j", kSlot, 0, kSlot + 4'000, 10)}).retries_scheduled, 1);
  const EpochMs next_slot = kSlot + 5 * 60'000;
  const ExecutionApplyResult r = Report({Succeeded("j", next_slot, 0, 11)});
  EXPECT_EQ(r.retries_superseded, 1);
  EXPECT_TRUE(Retries().empty());
  // A failure of the old slot reported after the newer success schedules nothing.
  EXPECT_EQ(Report({Failed("j", kSlot, 1, kSlot + 70'000, 12)}).retries_scheduled, 0);
  // A failure of a newer slot still does.
  EXPECT_EQ(Report({Failed("j", next_slot + 5 * 60'000, 0, kNow, 13)}).retries_scheduled, 1);
}

TEST_F(PgRetryTest, SuccessAndFailureInOneBatch) {
  Apply({Job("j", 5, 1)});
  // The same slot's attempt 1 succeeded while attempt 0's failure arrives in the same batch.
  const ExecutionApplyResult r =
      Report({Failed("j", kSlot, 0, kSlot + 4'000, 10), Succeeded("j", kSlot, 1, 11)});
  EXPECT_EQ(r.retries_scheduled, 0);
  EXPECT_TRUE(Retries().empty());
}

TEST_F(PgRetryTest, ARetryDueLongAgoIsNotScheduled) {
  Apply({Job("j", 3, 1)});
  const EpochMs failed_at = kNow - 2 * 3600 * 1000;  // a replay of an old report
  const ExecutionApplyResult r = Report({Failed("j", failed_at - 4000, 0, failed_at, 10)});
  EXPECT_EQ(r.retries_scheduled, 0);
  EXPECT_EQ(r.retries_too_late, 1);
}

TEST_F(PgRetryTest, PausedJobsAreNotRetriedAndDeletingAJobCancelsItsRetries) {
  Apply({Job("j", 3, 1), Job(kK, 3, 2)});
  JobAction pause;
  pause.kind = JobAction::Kind::kSetPaused;
  pause.id = kK;
  pause.paused = true;
  pause.source = SourcePosition{0, 3, 0};
  Apply({pause});
  EXPECT_EQ(Report({Failed("j", kSlot, 0, kSlot + 4'000, 10), Failed(kK, kSlot, 0, kSlot + 4'000, 11)})
                .retries_scheduled,
            1);
  JobAction del;
  del.kind = JobAction::Kind::kDelete;
  del.id = "j";
  del.source = SourcePosition{0, 4, 0};
  Apply({del});
  EXPECT_TRUE(Retries().empty());
}

TEST_F(PgRetryTest, ARetryIsNeverPlacedInAMinuteTheShardFiredOrIsFiring) {
  Apply({Job("j", 3, 1), Job(kK, 3, 2)});
  const int64_t planned = FirstLayoutMinuteAtOrAfter(ShardLayout{}, kSlot + 4'000 + 60'000, kShard);
  // The shard already fired two minutes past the planned one (the consumer lagged).
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(planned + 2) +
            " WHERE shard = " + std::to_string(kShard));
  ASSERT_EQ(Report({Failed("j", kSlot, 0, kSlot + 4'000, 10)}).retries_scheduled, 1);
  EXPECT_EQ(Retries()[0].run_minute, planned + 3);
  // A live claim through planned + 5: a firing may already have queried those minutes.
  db().Exec(
      "UPDATE shard_state SET claim_node = 'n', claim_until = now() + interval '1 hour', claim_through = " +
      std::to_string(planned + 5) + " WHERE shard = " + std::to_string(kShard));
  ASSERT_EQ(Report({Failed(kK, kSlot, 0, kSlot + 4'000, 11)}).retries_scheduled, 1);
  EXPECT_EQ(Retries()[1].run_minute, planned + 6);
  // An expired claim no longer counts.
  db().Exec("UPDATE shard_state SET claim_until = now() - interval '1 second' WHERE shard = " +
            std::to_string(kShard));
  ASSERT_EQ(Report({Failed(kK, kSlot, 1, kSlot + 4'000, 12)}).retries_scheduled, 1);
  const int64_t planned2 = FirstLayoutMinuteAtOrAfter(ShardLayout{}, kSlot + 4'000 + 120'000, kShard);
  EXPECT_EQ(Retries()[2].run_minute, std::max(planned2, planned + 3));
}

TEST_F(PgRetryTest, JobReadBackCarriesItsRetrySettings) {
  Apply({Job("j", 3, 1)});
  auto job = jobs_->GetJob("j");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(job.value().has_value());
  EXPECT_EQ(job.value()->spec.max_retries, 3);
  EXPECT_EQ(job.value()->spec.retry_backoff, (RetryBackoff{60'000, 2.0, 600'000}));
  ASSERT_EQ(Report({Failed("j", kSlot, 0, kSlot + 4'000, 10)}).retries_scheduled, 1);
  auto retry = jobs_->GetJob(RetryRowId("j", kSlot, 1));
  ASSERT_TRUE(retry.ok());
  ASSERT_TRUE(retry.value().has_value());
  EXPECT_EQ(retry.value()->spec.attempt, 1);
  EXPECT_EQ(retry.value()->spec.retry_of, "j");
  EXPECT_TRUE(retry.value()->spec.one_shot());
}

// A success supersedes the job's retries of older slots, never its pending manual rows (which also
// have retry_of set): a backfill of last night must survive this morning's success.
TEST_F(PgRetryTest, ASuccessSupersedesRetriesButNotBackfillRows) {
  Apply({Job("j", 3, 1)});
  Report({Failed("j", kSlot, 0, kSlot + 1000, 1)});
  ASSERT_EQ(Retries().size(), 1u);
  ManualFire backfill;
  backfill.kind = ManualFire::Kind::kBackfill;
  backfill.id = "j";
  backfill.source = SourcePosition{1, 7, kNow};
  backfill.backfill.from_ms = (kMinute - 120) * 60'000;
  backfill.backfill.to_ms = kMinute * 60'000;
  StatusOr<std::vector<ManualFireResult>> stored = jobs_->ApplyManualFires({backfill});
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_TRUE(stored->at(0).status.ok()) << stored->at(0).status.ToString();
  EXPECT_EQ(stored->at(0).slots, 8);  // every 15 minutes over two hours

  Report({Succeeded("j", kSlot + 15 * 60'000, 0, 2)});
  const std::vector<RetryRow> rows = Retries();
  EXPECT_EQ(rows.size(), 8u);
  for (const RetryRow& r : rows) {
    EXPECT_EQ(r.attempt, 0) << r.id;
    EXPECT_NE(r.id.find("#backfill#"), std::string::npos) << r.id;
  }
}

// Retries placed during a reshard's cut-over C (120 -> 240 shards; docs/resharding.md), as
// ALateRowMovedPastTheCutOverFollowsTheNewShardsProgress places one-shots: a retry planned before
// C is placed by the old shard that fires its minute, and once that moves it to C or later, by the
// progress (fired, or a live claim) of the new shard that fires those minutes.
TEST_F(PgRetryTest, ARetryMovedPastTheCutOverFollowsTheNewShardsProgress) {
  const auto id_in = [](int32_t shard240) {
    for (int i = 0;; ++i) {
      std::string id = "cut-" + std::to_string(i);
      if (ShardForId(id, 240) == shard240) return id;
    }
  };
  const std::string moved = id_in(127);  // old shard 7, new shard 127
  const std::string stays = id_in(8);    // old and new shard 8
  const int64_t c = kMinute + 1;
  ShardLayout layout{120, 240, ShardLayout::Phase::kCutover, 119, c};
  db().Exec("UPDATE belfry_meta SET value = '" + EncodeShardLayout(layout) + "' WHERE key = 'layout'");
  db().Exec("INSERT INTO shard_state (shard) SELECT s FROM generate_series(120, 239) AS s");
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(c + 1) + " WHERE shard = 7");
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(c + 5) + " WHERE shard = 127");
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(c - 3) + " WHERE shard = 8");
  Apply({Job(moved, 3, 1), Job(stays, 3, 2)});
  ASSERT_EQ(db().Exec("SELECT shard FROM jobs WHERE id = '" + moved + "'")[0][0].as<int32_t>(), 127);

  // Both retries are planned for C - 1, whose firing rows are old shards 7 and 8.
  const EpochMs slot = (c - 2) * 60'000;
  const EpochMs moved_failed = StoredShardSlotMs(layout, c - 2, 127);
  const EpochMs stays_failed = StoredShardSlotMs(layout, c - 2, 8);
  ASSERT_EQ(FirstLayoutMinuteAtOrAfter(layout, moved_failed + 60'000, 127), c - 1);
  ASSERT_EQ(FirstLayoutMinuteAtOrAfter(layout, stays_failed + 60'000, 8), c - 1);
  ASSERT_EQ(
      Report({Failed(moved, slot, 0, moved_failed, 10), Failed(stays, slot, 0, stays_failed, 11)}).retries_scheduled,
      2);
  std::map<std::string, int64_t> minute_of;
  for (const RetryRow& r : Retries()) minute_of[r.id] = r.run_minute;
  // Old shard 7 fired through C + 1: C + 2, a minute new shard 127 has fired; after its C + 5.
  EXPECT_EQ(minute_of[RetryRowId(moved, slot, 1)], c + 6);
  // Shard 8 has fired through C - 3 only: the planned minute, before C.
  EXPECT_EQ(minute_of[RetryRowId(stays, slot, 1)], c - 1);

  // A live claim of new shard 127 through C + 8 counts as its progress too; an expired one of old
  // shard 7 does not.
  db().Exec("UPDATE shard_state SET claim_node = 'n', claim_until = now() + interval '1 hour', claim_through = " +
            std::to_string(c + 8) + " WHERE shard = 127");
  db().Exec("UPDATE shard_state SET claim_node = 'n', claim_until = now() - interval '1 second', claim_through = " +
            std::to_string(c + 20) + " WHERE shard = 7");
  const EpochMs again_failed = moved_failed - 60'000;  // attempt 2 waits 2 minutes: C - 1 again
  ASSERT_EQ(FirstLayoutMinuteAtOrAfter(layout, again_failed + 120'000, 127), c - 1);
  ASSERT_EQ(Report({Failed(moved, slot, 1, again_failed, 12)}).retries_scheduled, 1);
  for (const RetryRow& r : Retries()) minute_of[r.id] = r.run_minute;
  EXPECT_EQ(minute_of[RetryRowId(moved, slot, 2)], c + 9);
}

}  // namespace
}  // namespace belfry
