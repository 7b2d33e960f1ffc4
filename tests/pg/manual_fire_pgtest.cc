// Trigger and backfill commands in the PostgreSQL store (docs/manual-fires.md): the derived rows
// they store, where the tick query finds them, the backfill ledger that makes a repeat fire
// nothing twice, the dry run, and what deleting the job does.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/derived_row_id.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "migrated_database_test.h"
#include "pg/pg_job_store.h"

namespace belfry {
namespace {

constexpr int64_t kTickMs = 500;
constexpr int64_t kMinute = 29'000'260;  // "now": the commands are timestamped in it
const std::vector<int32_t> kIntervals = {1, 5, 15, 60};

struct Row {
  std::string id;
  EpochMs scheduled_for_ms;
  int32_t interval;
};

class PgManualFireTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
    shard_ = ShardForId("j", kMigratedShardCount);
    ASSERT_TRUE(store_->ApplyActions({Job("j", 1)}).ok());
  }

  // An interval job every 5 minutes at offset 2, in its own shard.
  JobAction Job(const std::string& id, int64_t src_offset) const {
    JobAction a;
    a.id = id;
    a.spec.id = id;
    a.spec.interval_minutes = 5;
    a.spec.offset_minutes = 2;
    a.spec.offset_explicit = true;
    a.spec.shard = ShardForId(id, kMigratedShardCount);
    a.spec.topic = "t";
    a.spec.details_json = R"({"n":1})";
    a.spec.priority = 4;
    a.source = SourcePosition{0, src_offset, 0};
    return a;
  }

  ManualFire Fire(ManualFire::Kind kind, const std::string& id, EpochMs at, int64_t src_offset) const {
    ManualFire f;
    f.kind = kind;
    f.id = id;
    f.source = SourcePosition{1, src_offset, at};
    return f;
  }

  ManualFire Backfill(int64_t from_minute, int64_t to_minute, int32_t rate, int64_t src_offset) const {
    ManualFire f = Fire(ManualFire::Kind::kBackfill, "j", SlotMs(kMinute, shard_, kTickMs) + 100, src_offset);
    f.backfill.from_ms = from_minute * 60'000;
    f.backfill.to_ms = to_minute * 60'000;
    f.backfill.rate_per_minute = rate;
    return f;
  }

  std::vector<ManualFireResult> Apply(const std::vector<ManualFire>& fires) {
    StatusOr<std::vector<ManualFireResult>> r = store_->ApplyManualFires(fires);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return {};
    EXPECT_EQ(r->size(), fires.size());
    return *r;
  }

  // The derived rows (ids with a marker) the tick query returns for minute m of the job's shard.
  std::vector<Row> DerivedDue(int64_t m) {
    DueQuery q{shard_, m, m, kTickMs, TermsForMinute(kIntervals, m)};
    std::vector<Row> rows;
    const Status st = store_->ForEachDueJob(q, [&](const DueJob& j) {
      if (ParseDerivedRowId(j.id)) rows.push_back(Row{std::string(j.id), j.scheduled_for_ms, j.interval_minutes});
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return rows;
  }

  // The job's own slots in [from, to) minutes, by brute force: minutes m with m % 5 == 2.
  std::vector<EpochMs> Slots(int64_t from_minute, int64_t to_minute) const {
    std::vector<EpochMs> out;
    for (int64_t m = from_minute; m < to_minute; ++m) {
      if (m % 5 == 2) out.push_back(SlotMs(m, shard_, kTickMs));
    }
    return out;
  }

  std::unique_ptr<PgJobStore> store_;
  int32_t shard_ = 0;
};

TEST_F(PgManualFireTest, TriggerStoresOneRowThatTheNextSlotFiresWithTheJobsFields) {
  const EpochMs at = SlotMs(kMinute, shard_, kTickMs) + 100;  // just after this minute's slot
  const std::vector<ManualFireResult> r = Apply({Fire(ManualFire::Kind::kTrigger, "j", at, 10)});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].slots, 1);
  EXPECT_TRUE(DerivedDue(kMinute).empty());
  const std::vector<Row> due = DerivedDue(kMinute + 1);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].id, DerivedRowId("j", DerivedKind::kTrigger, at));
  EXPECT_EQ(due[0].scheduled_for_ms, at);
  EXPECT_EQ(due[0].interval, 5);  // the job's, as the trigger carries it
  EXPECT_TRUE(DerivedDue(kMinute + 2).empty());

  auto row = store_->GetJob(DerivedRowId("j", DerivedKind::kTrigger, at));
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->spec.topic, "t");
  EXPECT_EQ((*row)->spec.details_json, R"({"n":1})");  // verbatim
  EXPECT_EQ((*row)->spec.priority, 4);
  EXPECT_EQ((*row)->spec.retry_of, "j");
  EXPECT_EQ((*row)->spec.attempt, 0);

  // A replay stores nothing new.
  const std::vector<ManualFireResult> again = Apply({Fire(ManualFire::Kind::kTrigger, "j", at, 10)});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0].status.ok());
  EXPECT_EQ(again[0].slots, 0);
  EXPECT_EQ(DerivedDue(kMinute + 1).size(), 1u);
}

TEST_F(PgManualFireTest, ALateTriggerMovesToTheShardsNextMinuteOnlyWithinItsLimit) {
  const EpochMs at = SlotMs(kMinute, shard_, kTickMs) + 100;
  // The shard has fired 3 minutes past the planned one: the row goes to the next minute.
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(kMinute + 3) +
            " WHERE shard = " + std::to_string(shard_));
  ASSERT_EQ(Apply({Fire(ManualFire::Kind::kTrigger, "j", at, 10)}).at(0).slots, 1);
  EXPECT_EQ(DerivedDue(kMinute + 4).size(), 1u);
  // A replay of a trigger from long ago (past scheduler.max_catchup) stays in its past minute.
  const EpochMs old = SlotMs(kMinute - 60, shard_, kTickMs) + 100;
  ASSERT_EQ(Apply({Fire(ManualFire::Kind::kTrigger, "j", old, 11)}).at(0).slots, 1);
  for (int64_t m = kMinute + 4; m < kMinute + 8; ++m) {
    for (const Row& r : DerivedDue(m)) EXPECT_NE(r.scheduled_for_ms, old) << "minute " << m;
  }
  EXPECT_EQ(DerivedDue(kMinute - 59).size(), 1u) << "stored in its own past minute";
}

TEST_F(PgManualFireTest, AFireOfAMissingJobFailsAloneAndStoresNothing) {
  const EpochMs at = SlotMs(kMinute, shard_, kTickMs) + 100;
  const std::vector<ManualFireResult> r =
      Apply({Fire(ManualFire::Kind::kTrigger, "nope", at, 10), Fire(ManualFire::Kind::kTrigger, "j", at, 11)});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status.code(), Status::Code::kNotFound);
  EXPECT_TRUE(r[1].status.ok());
  EXPECT_EQ(DerivedDue(kMinute + 1).size(), 1u);
}

// Triggers are applied set-based; repeats, a missing job and a job stored outside the shard of
// its id (the one-by-one path) are settled in the same call, each with its own result.
TEST_F(PgManualFireTest, ManyTriggersInOneCallWithRepeatsAMissingJobAndAJobOutsideItsShard) {
  std::vector<JobAction> jobs;
  for (int k = 0; k < 50; ++k) jobs.push_back(Job("k" + std::to_string(k), 2));
  JobAction odd = Job("odd", 2);
  odd.spec.shard = (ShardForId("odd", kMigratedShardCount) + 1) % kMigratedShardCount;
  jobs.push_back(odd);
  ASSERT_TRUE(store_->ApplyActions(jobs).ok());
  const EpochMs at = SlotMs(kMinute, shard_, kTickMs) + 100;
  std::vector<ManualFire> fires;
  for (int k = 0; k < 50; ++k) fires.push_back(Fire(ManualFire::Kind::kTrigger, "k" + std::to_string(k), at, 10 + k));
  fires.push_back(Fire(ManualFire::Kind::kTrigger, "j", at, 70));
  fires.push_back(Fire(ManualFire::Kind::kTrigger, "nope", at, 71));
  fires.push_back(Fire(ManualFire::Kind::kTrigger, "j", at, 72));  // the same millisecond: the same row
  fires.push_back(Fire(ManualFire::Kind::kTrigger, "odd", at, 73));
  const std::vector<ManualFireResult> r = Apply(fires);
  ASSERT_EQ(r.size(), 54u);
  for (int k = 0; k < 50; ++k) {
    EXPECT_TRUE(r[k].status.ok()) << k;
    EXPECT_EQ(r[k].slots, 1) << k;
  }
  EXPECT_EQ(r[50].slots, 1);
  EXPECT_EQ(r[51].status.code(), Status::Code::kNotFound);
  EXPECT_TRUE(r[52].status.ok());
  EXPECT_EQ(r[52].slots, 0);
  EXPECT_TRUE(r[53].status.ok()) << r[53].status.ToString();
  EXPECT_EQ(r[53].slots, 1);
  auto row = store_->GetJob(DerivedRowId("odd", DerivedKind::kTrigger, at));
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->spec.shard, odd.spec.shard) << "the row lives in its job's shard";
  EXPECT_EQ(db().Exec("SELECT count(*) FROM jobs WHERE retry_of IS NOT NULL")[0][0].as<int64_t>(), 52);
  // Each row of a job in `j`'s shard is due in the minute after the command, as one statement placed it.
  for (const Row& due : DerivedDue(kMinute + 1)) EXPECT_EQ(due.scheduled_for_ms, at) << due.id;
}

TEST_F(PgManualFireTest, BackfillFiresTheRangesSlotsOldestFirstAtItsRate) {
  const std::vector<EpochMs> slots = Slots(kMinute - 30, kMinute);
  ASSERT_EQ(slots.size(), 6u);
  const std::vector<ManualFireResult> r = Apply({Backfill(kMinute - 30, kMinute, 2, 20)});
  ASSERT_TRUE(r.at(0).status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].slots, 6);
  EXPECT_EQ(r[0].covered, 0);
  std::vector<EpochMs> fired;
  for (int64_t m = kMinute + 1; m <= kMinute + 3; ++m) {
    const std::vector<Row> due = DerivedDue(m);
    EXPECT_EQ(due.size(), 2u) << "at most ratePerMinute in minute " << m;
    for (const Row& row : due) fired.push_back(row.scheduled_for_ms);
  }
  EXPECT_TRUE(DerivedDue(kMinute + 4).empty());
  std::sort(fired.begin(), fired.end());
  EXPECT_EQ(fired, slots);
  EXPECT_EQ(DerivedDue(kMinute + 1).at(0).scheduled_for_ms < slots[2], true) << "oldest first";
}

TEST_F(PgManualFireTest, ARepeatedOrOverlappingBackfillFiresOnlyUncoveredSlots) {
  ASSERT_EQ(Apply({Backfill(kMinute - 30, kMinute, 100, 20)}).at(0).slots, 6);
  const ManualFireResult same = Apply({Backfill(kMinute - 30, kMinute, 100, 20)}).at(0);
  EXPECT_TRUE(same.status.ok());
  EXPECT_EQ(same.slots, 0);
  EXPECT_EQ(same.covered, 6);
  // [kMinute-40, kMinute-20): 4 slots, 2 of them covered by the first range.
  const ManualFireResult overlap = Apply({Backfill(kMinute - 40, kMinute - 20, 100, 21)}).at(0);
  EXPECT_EQ(overlap.slots, 2);
  EXPECT_EQ(overlap.covered, 2);
  std::vector<EpochMs> fired;
  for (const Row& row : DerivedDue(kMinute + 1)) fired.push_back(row.scheduled_for_ms);
  std::sort(fired.begin(), fired.end());
  EXPECT_EQ(fired, Slots(kMinute - 40, kMinute));
}

TEST_F(PgManualFireTest, DryRunAndCountStoreNothing) {
  ManualFire dry = Backfill(kMinute - 30, kMinute, 60, 20);
  dry.backfill.dry_run = true;
  const ManualFireResult r = Apply({dry}).at(0);
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.slots, 6);
  EXPECT_TRUE(DerivedDue(kMinute + 1).empty());
  StatusOr<ManualFireResult> counted = store_->CountBackfill(Backfill(kMinute - 30, kMinute, 60, 0));
  ASSERT_TRUE(counted.ok()) << counted.status().ToString();
  EXPECT_EQ(counted->slots, 6);
  EXPECT_EQ(counted->covered, 0);
  // The dry run recorded no range: a real backfill still fires all six.
  EXPECT_EQ(Apply({Backfill(kMinute - 30, kMinute, 60, 21)}).at(0).slots, 6);
  counted = store_->CountBackfill(Backfill(kMinute - 30, kMinute, 60, 0));
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->slots, 0);
  EXPECT_EQ(counted->covered, 6);
  EXPECT_EQ(store_->CountBackfill(Fire(ManualFire::Kind::kBackfill, "nope", 0, 0)).status().code(),
            Status::Code::kNotFound);
}

TEST_F(PgManualFireTest, DeletingTheJobDeletesItsRowsAndForgetsItsRanges) {
  ASSERT_EQ(Apply({Backfill(kMinute - 30, kMinute, 100, 20)}).at(0).slots, 6);
  JobAction del;
  del.kind = JobAction::Kind::kDelete;
  del.id = "j";
  del.source = SourcePosition{0, 5, 0};
  ASSERT_TRUE(store_->ApplyActions({del}).ok());
  EXPECT_TRUE(DerivedDue(kMinute + 1).empty());
  ASSERT_TRUE(store_->ApplyActions({Job("j", 6)}).ok());
  const ManualFireResult again = Apply({Backfill(kMinute - 30, kMinute, 100, 22)}).at(0);
  EXPECT_EQ(again.slots, 6);
  EXPECT_EQ(again.covered, 0);
}

TEST_F(PgManualFireTest, AOneShotCannotBeBackfilled) {
  JobAction once = Job("once", 1);
  once.spec.interval_minutes = 0;
  once.spec.offset_minutes = 0;
  once.spec.run_at = (kMinute + 5) * 60'000;
  once.spec.run_minute = kMinute + 5;
  once.spec.scheduled_for_ms = SlotMs(kMinute + 5, once.spec.shard, kTickMs);
  ASSERT_TRUE(store_->ApplyActions({once}).ok());
  ManualFire f = Backfill(kMinute - 30, kMinute, 60, 20);
  f.id = "once";
  const ManualFireResult r = Apply({f}).at(0);
  EXPECT_EQ(r.status.reason(), "invalid_backfill");
}

}  // namespace
}  // namespace belfry
