// One-shot jobs and priority order in the PostgreSQL store: the tick query, the late move, the
// retention sweep, and switching a job between the two kinds.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/slot_math.h"
#include "migrated_database_test.h"
#include "pg/pg_job_store.h"

namespace belfry {
namespace {

constexpr int32_t kShardCount = 120;
constexpr int64_t kTickMs = 500;
constexpr int64_t kMinute = 29'000'260;
const std::vector<int32_t> kIntervals = {1, 5, 15, 60};

JobAction Interval(const std::string& id, int32_t shard, int32_t priority, int64_t src_offset) {
  JobAction a;
  a.id = id;
  a.spec.id = id;
  a.spec.interval_minutes = 1;
  a.spec.shard = shard;
  a.spec.topic = "t";
  a.spec.details_json = "{}";
  a.spec.priority = priority;
  a.source = SourcePosition{0, src_offset, 0};
  return a;
}

JobAction OneShot(const std::string& id, int32_t shard, int64_t run_minute, int64_t late_limit,
                  int64_t src_offset, int32_t priority = 0) {
  JobAction a = Interval(id, shard, priority, src_offset);
  a.spec.interval_minutes = 0;
  a.spec.offset_explicit = true;
  a.spec.run_at = run_minute * 60'000 + 1234;
  a.spec.run_minute = run_minute;
  a.spec.scheduled_for_ms = SlotMs(run_minute, shard, kTickMs);
  a.spec.late_limit_minute = late_limit;
  return a;
}

struct Row {
  std::string id;
  int64_t due_minute;
  EpochMs scheduled_for_ms;
  int32_t interval;
};

class PgOneShotTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
  }

  std::vector<Row> Due(int32_t shard, int64_t first, int64_t last) {
    DueQuery q{shard, first, last, kTickMs,
               first == last ? TermsForMinute(kIntervals, last) : TermsForRange(kIntervals, first, last)};
    std::vector<Row> rows;
    const Status st = store_->ForEachDueJob(q, [&](const DueJob& j) {
      rows.push_back(Row{std::string(j.id), j.due_minute, j.scheduled_for_ms, j.interval_minutes});
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return rows;
  }

  std::unique_ptr<PgJobStore> store_;
};

TEST_F(PgOneShotTest, PriorityOrderWithinAShardMinute) {
  const int priorities[] = {0, 5, -1, 0, 100, -7, 5, 0, 3, -1};
  std::vector<JobAction> actions;
  for (int i = 0; i < 10; ++i) {
    std::string id = "p";
    id += std::to_string(i);
    actions.push_back(Interval(id, 3, priorities[i], i));
  }
  actions.push_back(OneShot("once-hi", 3, kMinute, -1, 20, 50));
  actions.push_back(OneShot("once-lo", 3, kMinute, -1, 21, -3));
  ASSERT_TRUE(store_->ApplyActions(actions).ok());
  const std::vector<Row> rows = Due(3, kMinute, kMinute);
  ASSERT_EQ(rows.size(), 12u);
  auto priority_of = [&](const std::string& id) {
    if (id == "once-hi") return 50;
    if (id == "once-lo") return -3;
    return priorities[std::stoi(id.substr(1))];
  };
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_GE(priority_of(rows[i - 1].id), priority_of(rows[i].id))
        << rows[i - 1].id << " before " << rows[i].id;
  }
  EXPECT_EQ(rows[0].id, "p4");
}

TEST_F(PgOneShotTest, OneShotIsDueOnlyInItsMinute) {
  ASSERT_TRUE(store_->ApplyActions({OneShot("o", 9, kMinute + 2, -1, 1), Interval("i", 9, 0, 2)}).ok());
  for (int64_t m = kMinute; m < kMinute + 5; ++m) {
    const std::vector<Row> rows = Due(9, m, m);
    size_t one_shots = 0;
    for (const Row& r : rows) {
      if (r.id != "o") continue;
      ++one_shots;
      EXPECT_EQ(m, kMinute + 2);
      EXPECT_EQ(r.scheduled_for_ms, SlotMs(kMinute + 2, 9, kTickMs));
      EXPECT_EQ(r.interval, 0);
    }
    EXPECT_EQ(one_shots, m == kMinute + 2 ? 1u : 0u) << m;
    for (const Row& r : rows) {
      if (r.id == "i") {
        EXPECT_EQ(r.scheduled_for_ms, 0);  // interval jobs: the slot, as before
      }
    }
  }
  // Coalesced catch-up over a range that contains it.
  std::vector<Row> range = Due(9, kMinute, kMinute + 4);
  ASSERT_EQ(range.size(), 2u);
  for (const Row& r : range) {
    if (r.id == "o") {
      EXPECT_EQ(r.due_minute, kMinute + 2);
    }
  }
  EXPECT_EQ(Due(9, kMinute + 3, kMinute + 4).size(), 1u);  // only the interval job
  EXPECT_TRUE(Due(8, kMinute + 2, kMinute + 2).empty());   // another shard
}

TEST_F(PgOneShotTest, GetJobRoundTripsAndKindsSwitch) {
  ASSERT_TRUE(store_->ApplyActions({OneShot("k", 1, kMinute, -1, 1)}).ok());
  auto got = store_->GetJob("k");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE((*got)->spec.one_shot());
  EXPECT_EQ(*(*got)->spec.run_at, kMinute * 60'000 + 1234);
  EXPECT_EQ((*got)->spec.run_minute, kMinute);
  EXPECT_EQ((*got)->spec.scheduled_for_ms, SlotMs(kMinute, 1, kTickMs));
  // Upsert as an interval job: the one-shot fields go, and it is due by interval.
  ASSERT_TRUE(store_->ApplyActions({Interval("k", 1, 0, 2)}).ok());
  got = store_->GetJob("k");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_FALSE((*got)->spec.one_shot());
  EXPECT_EQ((*got)->spec.interval_minutes, 1);
  ASSERT_EQ(Due(1, kMinute + 7, kMinute + 7).size(), 1u);
  // And back.
  ASSERT_TRUE(store_->ApplyActions({OneShot("k", 1, kMinute + 9, -1, 3)}).ok());
  EXPECT_TRUE(Due(1, kMinute + 7, kMinute + 7).empty());
  EXPECT_EQ(Due(1, kMinute + 9, kMinute + 9).size(), 1u);
  // Replay of the older interval upsert changes nothing.
  ASSERT_TRUE(store_->ApplyActions({Interval("k", 1, 0, 2)}).ok());
  EXPECT_TRUE(Due(1, kMinute + 7, kMinute + 7).empty());
}

TEST_F(PgOneShotTest, LateCommandMovesToTheShardsNextMinuteWithinItsLimit) {
  std::string sql = "UPDATE shard_state SET fired_through = ";
  sql += std::to_string(kMinute + 3);
  sql += " WHERE shard = 4";
  db().Exec(sql);
  ASSERT_TRUE(store_
                  ->ApplyActions({OneShot("late", 4, kMinute + 1, kMinute + 10, 1),
                                  OneShot("never", 4, kMinute + 1, -1, 2),
                                  OneShot("too-late", 4, kMinute + 1, kMinute + 3, 3),
                                  OneShot("future", 4, kMinute + 8, kMinute + 20, 4)})
                  .ok());
  EXPECT_EQ((*store_->GetJob("late"))->spec.run_minute, kMinute + 4);
  EXPECT_EQ((*store_->GetJob("late"))->spec.scheduled_for_ms, SlotMs(kMinute + 1, 4, kTickMs));
  EXPECT_EQ((*store_->GetJob("never"))->spec.run_minute, kMinute + 1);
  EXPECT_EQ((*store_->GetJob("too-late"))->spec.run_minute, kMinute + 1);
  EXPECT_EQ((*store_->GetJob("future"))->spec.run_minute, kMinute + 8);
  const std::vector<Row> rows = Due(4, kMinute + 4, kMinute + 4);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, "late");
}

// A command applied while its shard is firing its minute (a live claim through that minute, the
// watermark not yet moved) may come after that firing's query: it goes to the next minute, as a
// late command does, instead of being missed. A lapsed claim does not count: that minute will be
// fired again by the catch-up scan.
TEST_F(PgOneShotTest, CommandDuringALiveClaimOfItsMinuteMovesToTheNextMinute) {
  const auto claim = [](int shard, int64_t through, const char* until) {
    return "UPDATE shard_state SET fired_through = " + std::to_string(through - 1) +
           ", claim_node = 'node-a', claim_until = now() + interval '" + until +
           "', claim_through = " + std::to_string(through) + " WHERE shard = " + std::to_string(shard);
  };
  db().Exec(claim(5, kMinute + 2, "30 seconds"));
  db().Exec(claim(6, kMinute + 2, "-30 seconds"));  // lapsed
  ASSERT_TRUE(store_
                  ->ApplyActions({OneShot("racing", 5, kMinute + 2, kMinute + 10, 1),
                                  OneShot("racing-skip", 5, kMinute + 2, -1, 2),
                                  OneShot("next", 5, kMinute + 3, kMinute + 10, 3),
                                  OneShot("lapsed", 6, kMinute + 2, kMinute + 10, 4)})
                  .ok());
  EXPECT_EQ((*store_->GetJob("racing"))->spec.run_minute, kMinute + 3);
  EXPECT_EQ((*store_->GetJob("racing"))->spec.scheduled_for_ms, SlotMs(kMinute + 2, 5, kTickMs));
  EXPECT_EQ((*store_->GetJob("racing-skip"))->spec.run_minute, kMinute + 2);  // no late_limit: stays
  EXPECT_EQ((*store_->GetJob("next"))->spec.run_minute, kMinute + 3);
  EXPECT_EQ((*store_->GetJob("lapsed"))->spec.run_minute, kMinute + 2);
  // The same placement on the update path: "lapsed" re-sent (a newer offset) once shard 6's
  // claim is live.
  db().Exec(claim(6, kMinute + 2, "30 seconds"));
  ASSERT_TRUE(store_->ApplyActions({OneShot("lapsed", 6, kMinute + 2, kMinute + 10, 5)}).ok());
  EXPECT_EQ((*store_->GetJob("lapsed"))->spec.run_minute, kMinute + 3);
}

TEST_F(PgOneShotTest, SweepDeletesOnlyExpiredOneShots) {
  ASSERT_TRUE(
      store_
          ->ApplyActions({OneShot("old1", 2, kMinute - 100, -1, 1), OneShot("old2", 3, kMinute - 50, -1, 2),
                          OneShot("fresh", 2, kMinute, -1, 3), Interval("interval", 2, 0, 4)})
          .ok());
  auto n = store_->SweepOneShots(kMinute - 10, 1);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  n = store_->SweepOneShots(kMinute - 10, 100);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  EXPECT_FALSE(store_->GetJob("old1")->has_value());
  EXPECT_FALSE(store_->GetJob("old2")->has_value());
  EXPECT_TRUE(store_->GetJob("fresh")->has_value());
  EXPECT_TRUE(store_->GetJob("interval")->has_value());
}

// Issue 33 §1: a swept one-shot takes its last delivery error (migration 0017) with it.
TEST_F(PgOneShotTest, SweepDeletesTheSweptOneShotsDeliveryErrors) {
  ASSERT_TRUE(
      store_->ApplyActions({OneShot("old", 2, kMinute - 100, -1, 1), OneShot("fresh", 2, kMinute, -1, 2)}).ok());
  for (const char* id : {"old", "fresh"}) {
    ASSERT_TRUE(store_->RecordDeliveryError({id, "out.small", 1, "Broker: Message size too large", 2}).ok());
  }
  auto n = store_->SweepOneShots(kMinute - 10, 100);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(db().Exec("SELECT job_id FROM trigger_delivery_errors ORDER BY job_id")[0][0].as<std::string>(), "fresh");
  EXPECT_EQ(db().Exec("SELECT count(*) FROM trigger_delivery_errors")[0][0].as<int64_t>(), 1);
}

TEST_F(PgOneShotTest, PausedOneShotDoesNotFire) {
  JobAction a = OneShot("zz", 6, kMinute, -1, 1);
  a.paused = true;
  ASSERT_TRUE(store_->ApplyActions({a}).ok());
  EXPECT_TRUE(Due(6, kMinute, kMinute).empty());
}

}  // namespace
}  // namespace belfry
