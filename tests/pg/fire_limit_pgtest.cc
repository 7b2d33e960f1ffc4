// Limited runs (maxFires, docs/fire-limits.md) in the PostgreSQL store: the end the tick query
// applies, what a job reads back as, and the recount that a resume makes on the real server.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/fire_limit.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "migrated_database_test.h"
#include "pg/pg_job_store.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int64_t kTickMs = 500;
const std::vector<int32_t> kIntervals = {1, 5, 15, 60};

EpochMs WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class PgFireLimitTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
    shard_ = ShardForId("lim", kMigratedShardCount);
  }

  // An every-minute job limited to `max_fires` fires counted from `from_ms`, as the parser plans it.
  JobAction Limited(int32_t max_fires, EpochMs from_ms, int64_t src_offset) const {
    JobAction a;
    a.id = "lim";
    a.spec.id = "lim";
    a.spec.interval_minutes = 1;
    a.spec.offset_minutes = 0;
    a.spec.offset_explicit = true;
    a.spec.shard = shard_;
    a.spec.topic = "t";
    a.spec.details_json = "{}";
    a.spec.max_fires = max_fires;
    a.spec.fires_from_ms = from_ms;
    ApplyFireLimit(SystemTimeZones(), &a.spec, kTickMs);
    a.source = SourcePosition{0, src_offset, from_ms};
    return a;
  }

  JobAction SetPaused(bool paused, EpochMs ts, int64_t src_offset) const {
    JobAction a;
    a.kind = JobAction::Kind::kSetPaused;
    a.id = "lim";
    a.paused = paused;
    a.source = SourcePosition{0, src_offset, ts};
    return a;
  }

  // The minutes in [first, last] whose tick of the job's shard returns the job.
  std::vector<int64_t> DueMinutes(int64_t first, int64_t last) {
    std::vector<int64_t> out;
    for (int64_t m = first; m <= last; ++m) {
      DueQuery q{shard_, m, m, kTickMs, TermsForMinute(kIntervals, m)};
      const Status st = store_->ForEachDueJob(q, [&](const DueJob& j) {
        if (j.id == "lim") out.push_back(m);
      });
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    return out;
  }

  StoredJob Stored() {
    StatusOr<std::optional<StoredJob>> job = store_->GetJob("lim");
    EXPECT_TRUE(job.ok() && job->has_value());
    return job.ok() && job->has_value() ? **job : StoredJob{};
  }

  std::unique_ptr<PgJobStore> store_;
  int32_t shard_ = 0;
};

TEST_F(PgFireLimitTest, TheTickQueryReturnsALimitedJobForExactlyItsFires) {
  constexpr int64_t kMinute = 29'000'260;
  ASSERT_TRUE(store_->ApplyActions({Limited(3, kMinute * 60'000, 1)}).ok());
  EXPECT_EQ(DueMinutes(kMinute - 5, kMinute + 20), (std::vector<int64_t>{kMinute, kMinute + 1, kMinute + 2}));
  const StoredJob job = Stored();
  EXPECT_EQ(job.spec.max_fires, 3);
  EXPECT_EQ(job.spec.fires_before, 0);
  EXPECT_EQ(job.spec.fires_from_ms, kMinute * 60'000);
  EXPECT_EQ(job.spec.end_at, (kMinute + 3) * 60'000);
  EXPECT_FALSE(job.spec.requested_end_at.has_value()) << "no endDateTime was asked for";
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), job.spec, false, std::nullopt, kTickMs,
                           SlotMs(kMinute + 1, shard_, kTickMs)),
            1);

  // An upsert without maxFires lifts the limit: the job fires on.
  JobAction unlimited = Limited(3, kMinute * 60'000, 2);
  unlimited.spec.max_fires.reset();
  ApplyFireLimit(SystemTimeZones(), &unlimited.spec, kTickMs);
  ASSERT_TRUE(store_->ApplyActions({unlimited}).ok());
  EXPECT_EQ(DueMinutes(kMinute + 30, kMinute + 32).size(), 3u);
  EXPECT_FALSE(Stored().spec.max_fires.has_value());
  EXPECT_FALSE(Stored().spec.end_at.has_value());
}

TEST_F(PgFireLimitTest, AResumeCountsWhatFiredBeforeThePauseAndFiresTheRest) {
  const EpochMs now = WallNowMs();
  const int64_t now_minute = EpochMinuteOf(now);
  // Counting began three minutes ago: the slots of minutes now-3 .. now-1 (and maybe now's) fired.
  ASSERT_TRUE(store_->ApplyActions({Limited(6, (now_minute - 3) * 60'000, 1)}).ok());
  ASSERT_TRUE(store_->ApplyActions({SetPaused(true, now, 2)}).ok());
  const StoredJob paused = Stored();
  ASSERT_TRUE(paused.paused && paused.paused_at.has_value());
  int64_t fired = 0;  // by brute force: the slots before the pause took effect
  for (int64_t m = now_minute - 3; SlotMs(m, shard_, kTickMs) < *paused.paused_at; ++m) ++fired;
  ASSERT_GE(fired, 3);
  EXPECT_EQ(FiresRemaining(SystemTimeZones(), paused.spec, true, paused.paused_at, kTickMs, now + 3'600'000),
            6 - fired)
      << "a paused job's count stands still";

  // A resume an hour on: the rest fire from the resume's timestamp, no more.
  const int64_t resume_minute = now_minute + 60;
  const EpochMs resume_ms = resume_minute * 60'000;
  ASSERT_TRUE(store_->ApplyActions({SetPaused(false, resume_ms, 3)}).ok());
  const StoredJob resumed = Stored();
  EXPECT_FALSE(resumed.paused);
  EXPECT_EQ(resumed.spec.fires_before, fired);
  EXPECT_EQ(resumed.spec.fires_from_ms, resume_ms);
  std::vector<int64_t> expected;
  for (int64_t k = 0; k < 6 - fired; ++k) expected.push_back(resume_minute + k);
  EXPECT_EQ(DueMinutes(resume_minute - 2, resume_minute + 10), expected);

  // A replay of the resume, and a resume of a running job, change nothing.
  ASSERT_TRUE(store_->ApplyActions({SetPaused(false, resume_ms + 600'000, 3)}).ok());
  ASSERT_TRUE(store_->ApplyActions({SetPaused(false, resume_ms + 600'000, 4)}).ok());
  EXPECT_EQ(Stored().spec.fires_from_ms, resume_ms);
  EXPECT_EQ(Stored().spec.end_at, resumed.spec.end_at);
}

// A batch that resumes several limited jobs and an unlimited one recounts each limited job from its
// own row, in one read and one update, and leaves the unlimited job's window alone.
TEST_F(PgFireLimitTest, ABatchOfResumesRecountsEachLimitedJob) {
  const EpochMs now = WallNowMs();
  const int64_t now_minute = EpochMinuteOf(now);
  std::vector<JobAction> create, pause, resume;
  for (int k = 0; k < 4; ++k) {
    JobAction a = Limited(10 + k, (now_minute - 5) * 60'000, 1);
    a.id = a.spec.id = "batch-" + std::to_string(k);
    a.spec.shard = ShardForId(a.id, kMigratedShardCount);
    a.spec.interval_minutes = k == 3 ? 5 : 1;
    if (k == 3) a.spec.max_fires.reset();  // the unlimited one
    ApplyFireLimit(SystemTimeZones(), &a.spec, kTickMs);
    create.push_back(a);
    JobAction p = SetPaused(true, now, 2);
    p.id = a.id;
    pause.push_back(p);
    JobAction r = SetPaused(false, now + 3'600'000, 3);
    r.id = a.id;
    resume.push_back(r);
  }
  ASSERT_TRUE(store_->ApplyActions(create).ok());
  ASSERT_TRUE(store_->ApplyActions(pause).ok());
  ASSERT_TRUE(store_->ApplyActions(resume).ok());
  for (int k = 0; k < 4; ++k) {
    StatusOr<std::optional<StoredJob>> job = store_->GetJob("batch-" + std::to_string(k));
    ASSERT_TRUE(job.ok() && job->has_value());
    const JobSpec& s = (*job)->spec;
    if (k == 3) {
      EXPECT_FALSE(s.max_fires.has_value());
      EXPECT_FALSE(s.start_at.has_value()) << "an unlimited job's window is not touched";
      EXPECT_FALSE(s.end_at.has_value());
      continue;
    }
    int64_t fired = 0;  // every minute's slot from now-5 up to the pause
    for (int64_t m = now_minute - 5; m <= now_minute + 1; ++m) {
      if (SlotMs(m, s.shard, kTickMs) >= (now_minute - 5) * 60'000 && SlotMs(m, s.shard, kTickMs) < now) ++fired;
    }
    EXPECT_GE(s.fires_before, fired) << k;      // the pause took effect at or after `now`
    EXPECT_LE(s.fires_before, fired + 1) << k;  // within a second of it
    EXPECT_EQ(s.fires_from_ms, now + 3'600'000) << k;
    EXPECT_EQ(
        CountJobSlots(SystemTimeZones(), s, kTickMs, s.fires_from_ms, s.fires_from_ms + 86'400'000, 1000),
        10 + k - s.fires_before)
        << k;
  }
}

}  // namespace
}  // namespace belfry
