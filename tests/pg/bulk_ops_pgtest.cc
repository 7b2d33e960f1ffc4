// Bulk operations in the PostgreSQL store (migration 0014, docs/bulk-operations.md): recorded once
// per command, walked in bounded steps across every shard, each job changed once, the jobs'
// own command positions kept, and a dry run that counts without changing.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/fire_limit.h"
#include "core/slot_math.h"
#include "labelled_job_action.h"
#include "migrated_database_test.h"
#include "pg/pg_job_store.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int64_t kTickMs = 500;

EpochMs WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class PgBulkOpsTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
  }

  static JobAction Job(const std::string& id, const std::string& owner, const std::string& labels, int64_t offset) {
    return LabelledJobAction(id, owner, labels, offset, kMigratedShardCount);
  }


  static BulkOp Op(const std::string& id, CommandOp op, std::optional<std::string> owner, std::string labels,
                   int64_t offset, bool dry_run = false) {
    BulkOp b;
    b.id = id;
    b.op = op;
    b.selector.owner = std::move(owner);
    b.selector.labels_json = std::move(labels);
    b.reason = "maintenance";
    b.actor = "ops@example";
    b.dry_run = dry_run;
    b.source = SourcePosition{3, offset, WallNowMs()};
    return b;
  }

  // Steps until the store has no unfinished operation; returns the last state of each step.
  std::vector<BulkOpState> RunToEnd(int32_t step_jobs) {
    std::vector<BulkOpState> steps;
    for (int i = 0; i < 10'000; ++i) {
      StatusOr<std::optional<BulkOpState>> s = store_->RunBulkStep(step_jobs, WallNowMs());
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s.ok() || !s->has_value()) break;
      steps.push_back(**s);
    }
    return steps;
  }

  int64_t Count(const std::string& where) {
    return db().Exec("SELECT count(*) FROM jobs WHERE " + where)[0][0].as<int64_t>();
  }

  // 60 jobs of owner "fleet" spread over the shards, half of them labelled env=staging, and 10 of
  // another owner with the same label.
  static std::vector<JobAction> Fleet() {
    std::vector<JobAction> jobs;
    for (int i = 0; i < 60; ++i) {
      jobs.push_back(Job("fleet-" + std::to_string(i), "fleet",
                                       i % 2 == 0 ? R"({"env":"staging"})" : R"({"env":"prod"})", 10 + i));
    }
    for (int i = 0; i < 10; ++i) {
      jobs.push_back(Job("other-" + std::to_string(i), "other", R"({"env":"staging"})", 100 + i));
    }
    return jobs;
  }

  std::unique_ptr<PgJobStore> store_;
};

TEST_F(PgBulkOpsTest, APauseWalksEveryShardInBoundedStepsAndChangesEachMatchingJobOnce) {
  ASSERT_TRUE(store_->ApplyActions(Fleet()).ok());
  // One job of the selection is already paused with its own note: the bulk pause leaves it be.
  JobAction own = Job("fleet-0", "fleet", R"({"env":"staging"})", 500);
  own.kind = JobAction::Kind::kSetPaused;
  own.paused = true;
  own.pause_reason = "its own";
  ASSERT_TRUE(store_->ApplyActions({own}).ok());

  StatusOr<std::vector<Status>> accepted =
      store_->AcceptBulkOps({Op("pause-staging", CommandOp::kPause, "fleet", R"({"env":"staging"})", 7)});
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  ASSERT_EQ(accepted->size(), 1u);
  EXPECT_TRUE((*accepted)[0].ok());

  const std::vector<BulkOpState> steps = RunToEnd(/*step_jobs=*/4);
  ASSERT_FALSE(steps.empty());
  const BulkOpState& last = steps.back();
  ASSERT_TRUE(last.finished_at.has_value());
  EXPECT_EQ(last.next_shard, kMigratedShardCount);
  EXPECT_EQ(last.matched, 30);
  EXPECT_EQ(last.changed, 29) << "the job that was already paused is not changed";
  EXPECT_GE(last.steps, 30 / 4) << "no step changes more than step_jobs jobs";
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_LE(steps[i].changed - steps[i - 1].changed, 4);
  }

  EXPECT_EQ(Count("paused"), 30);
  EXPECT_EQ(Count("paused AND owner = 'fleet' AND labels @> '{\"env\":\"staging\"}'"), 30);
  EXPECT_EQ(Count("paused AND pause_reason = 'maintenance' AND pause_actor = 'ops@example'"), 29);
  EXPECT_EQ(Count("id = 'fleet-0' AND pause_reason = 'its own'"), 1);
  // The jobs keep the position of their own last command: a replay of it is still recognised.
  EXPECT_EQ(Count("id = 'fleet-2' AND src_partition = 0 AND src_offset = 12"), 1);
  JobAction replayed_resume = Job("fleet-2", "fleet", "", 12);
  replayed_resume.kind = JobAction::Kind::kSetPaused;
  replayed_resume.paused = false;
  ASSERT_TRUE(store_->ApplyActions({replayed_resume}).ok());
  EXPECT_EQ(Count("id = 'fleet-2' AND paused"), 1) << "a replayed older command must not undo the bulk pause";

  // Nothing is left to step, and the outcome waits to be published once.
  StatusOr<std::optional<BulkOpState>> idle = store_->RunBulkStep(4, WallNowMs());
  ASSERT_TRUE(idle.ok());
  EXPECT_FALSE(idle->has_value());
  StatusOr<std::vector<BulkOpState>> unpublished = store_->UnpublishedBulkOps(10);
  ASSERT_TRUE(unpublished.ok());
  ASSERT_EQ(unpublished->size(), 1u);
  EXPECT_EQ((*unpublished)[0].op.id, "pause-staging");
  EXPECT_EQ((*unpublished)[0].op.selector.labels_json, R"({"env":"staging"})");
  ASSERT_TRUE(store_->MarkBulkOpPublished("pause-staging", WallNowMs()).ok());
  EXPECT_TRUE(store_->UnpublishedBulkOps(10)->empty());
}

TEST_F(PgBulkOpsTest, AReplayIsAcceptedOnceAndAReusedIdIsRejected) {
  const BulkOp op = Op("dup", CommandOp::kPause, "fleet", "", 7);
  ASSERT_TRUE(store_->AcceptBulkOps({op}).ok());
  StatusOr<std::vector<Status>> replay = store_->AcceptBulkOps({op});
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE((*replay)[0].ok()) << "the same command again is a replay";
  StatusOr<std::vector<Status>> reused = store_->AcceptBulkOps({Op("dup", CommandOp::kDelete, "other", "", 8)});
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ((*reused)[0].reason(), "duplicate_bulk_id") << (*reused)[0].ToString();
  EXPECT_EQ(db().Exec("SELECT count(*) FROM bulk_ops")[0][0].as<int64_t>(), 1);
  EXPECT_EQ(db().Exec("SELECT op FROM bulk_ops")[0][0].as<std::string>(), "pause");
}

TEST_F(PgBulkOpsTest, ADryRunCountsAndChangesNothing) {
  ASSERT_TRUE(store_->ApplyActions(Fleet()).ok());
  ASSERT_TRUE(store_->AcceptBulkOps({Op("count", CommandOp::kDelete, std::nullopt, R"({"env":"staging"})", 7, true)})
                  .ok());
  const std::vector<BulkOpState> steps = RunToEnd(1000);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.back().matched, 40);
  EXPECT_EQ(steps.back().changed, 0);
  EXPECT_EQ(steps.size(), static_cast<size_t>((kMigratedShardCount + PgJobStore::kBulkShardsPerStep - 1) /
                                              PgJobStore::kBulkShardsPerStep));
  EXPECT_EQ(Count("true"), 70);
}

TEST_F(PgBulkOpsTest, ADeleteRemovesTheJobsAndTheirDerivedRows) {
  ASSERT_TRUE(store_->ApplyActions(Fleet()).ok());
  // A pending manual trigger of a selected job: it goes with its job, and is never selected itself.
  ManualFire fire;
  fire.id = "other-3";
  fire.source = SourcePosition{0, 900, WallNowMs()};
  ASSERT_TRUE(store_->ApplyManualFires({fire}).ok());
  ASSERT_EQ(Count("retry_of = 'other-3'"), 1);
  ASSERT_TRUE(store_->AcceptBulkOps({Op("drop-other", CommandOp::kDelete, "other", "", 7)}).ok());
  const std::vector<BulkOpState> steps = RunToEnd(3);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.back().matched, 10);
  EXPECT_EQ(steps.back().changed, 10);
  EXPECT_EQ(Count("owner = 'other'"), 0);
  EXPECT_EQ(Count("true"), 60);
}

TEST_F(PgBulkOpsTest, ATriggerStoresOneManualRowPerMatchingJob) {
  ASSERT_TRUE(store_->ApplyActions(Fleet()).ok());
  ASSERT_TRUE(store_->AcceptBulkOps({Op("poke", CommandOp::kTrigger, "fleet", R"({"env":"prod"})", 7)}).ok());
  const EpochMs before = WallNowMs();
  const std::vector<BulkOpState> steps = RunToEnd(7);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.back().matched, 30);
  EXPECT_EQ(steps.back().changed, 30);
  EXPECT_EQ(Count("retry_of IS NOT NULL"), 30);
  EXPECT_EQ(Count("retry_of IS NOT NULL AND id LIKE '%#trigger#%' AND scheduled_for_ms >= " + std::to_string(before)),
            30);
  // Each row fires in its job's shard, within the next two minutes.
  EXPECT_EQ(Count("retry_of IS NOT NULL AND run_minute <= " + std::to_string(EpochMinuteOf(WallNowMs()) + 2)), 30);
}

TEST_F(PgBulkOpsTest, AResumeRestartsTheCountOfLimitedJobs) {
  const EpochMs now = WallNowMs();
  const int64_t now_minute = EpochMinuteOf(now);
  JobAction limited = Job("lim", "fleet", "", 1);
  limited.spec.interval_minutes = 1;
  limited.spec.offset_minutes = 0;
  limited.spec.offset_explicit = true;
  limited.spec.max_fires = 6;
  limited.spec.fires_from_ms = (now_minute - 3) * 60'000;
  ApplyFireLimit(SystemTimeZones(), &limited.spec, kTickMs);
  ASSERT_TRUE(store_->ApplyActions({limited, Job("plain", "fleet", "", 1)}).ok());
  ASSERT_TRUE(store_->AcceptBulkOps({Op("p", CommandOp::kPause, "fleet", "", 7)}).ok());
  RunToEnd(100);
  ASSERT_EQ(Count("paused"), 2);
  const EpochMs paused_at = (*store_->GetJob("lim"))->paused_at.value_or(0);
  int64_t fired = 0;
  for (int64_t m = now_minute - 3; SlotMs(m, limited.spec.shard, kTickMs) < paused_at; ++m) ++fired;

  ASSERT_TRUE(store_->AcceptBulkOps({Op("r", CommandOp::kResume, "fleet", "", 8)}).ok());
  const EpochMs resume_at = now + 3'600'000;  // the step's clock: an hour on
  StatusOr<std::optional<BulkOpState>> step = store_->RunBulkStep(100, resume_at);
  ASSERT_TRUE(step.ok() && step->has_value());
  while (!(*step)->finished_at) {
    step = store_->RunBulkStep(100, resume_at);
    ASSERT_TRUE(step.ok() && step->has_value());
  }
  EXPECT_EQ((*step)->changed, 2);
  EXPECT_EQ(Count("paused"), 0);
  const StoredJob lim = **store_->GetJob("lim");
  EXPECT_EQ(lim.spec.fires_before, fired);
  EXPECT_EQ(lim.spec.fires_from_ms, resume_at) << "the count goes on from the step that resumed it";
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), lim.spec, false, std::nullopt, kTickMs, resume_at), 6 - fired);
}

}  // namespace
}  // namespace belfry
