// The tick query against the pure due rule of src/core/slot_math.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/calendar_schedule.h"
#include "core/iso_time.h"
#include "core/layout_due_query.h"
#include "core/slot_math.h"
#include "migrated_database_test.h"
#include "pg/pg_due_queries.h"
#include "pg/pg_job_store.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

// Whether `plan` scans partition `name` of jobs: on Citus, a worker's shard of it, named
// <partition>_<Citus shard id>.
bool ScansPartition(const std::string& plan, const std::string& name) {
  return plan.find(" on " + name + " ") != std::string::npos ||
         std::regex_search(plan, std::regex(" on " + name + "_[0-9]+ "));
}


constexpr int32_t kShardCount = 120;
constexpr int64_t kTickMs = 500;
const std::vector<int32_t> kIntervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};

// 29000260 mod 1440 = 100, mod 60 = 40, mod 5 = 0, mod 2 = 0.
constexpr int64_t kMinute = 29'000'260;

struct TestJob {
  TestJob(std::string id_in, int32_t shard_in, int32_t interval_in, int32_t offset_in, bool paused_in = false,
          std::optional<EpochMs> start_in = std::nullopt, std::optional<EpochMs> end_in = std::nullopt)
      : id(std::move(id_in)),
        shard(shard_in),
        interval(interval_in),
        offset(offset_in),
        paused(paused_in),
        start_at(start_in),
        end_at(end_in) {}

  std::string id;
  int32_t shard;
  int32_t interval;
  int32_t offset;
  bool paused;
  std::optional<EpochMs> start_at;
  std::optional<EpochMs> end_at;
};

JobAction UpsertOf(const TestJob& j, int64_t src_offset) {
  JobAction a;
  a.kind = JobAction::Kind::kUpsert;
  a.id = j.id;
  a.spec.id = j.id;
  a.spec.interval_minutes = j.interval;
  a.spec.offset_minutes = j.offset;
  a.spec.shard = j.shard;
  a.spec.topic = "topic." + j.id;
  a.spec.key = "key." + j.id;
  a.spec.details_json = "{\"id\":\"" + j.id + "\"}";
  a.spec.start_at = j.start_at;
  a.spec.end_at = j.end_at;
  a.paused = j.paused;
  a.source = SourcePosition{0, src_offset, 0};
  return a;
}

class PgDueQueryTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
  }

  void Insert(const std::vector<TestJob>& jobs) {
    std::vector<JobAction> actions;
    for (size_t i = 0; i < jobs.size(); ++i) actions.push_back(UpsertOf(jobs[i], static_cast<int64_t>(i)));
    const Status st = store_->ApplyActions(actions);
    ASSERT_TRUE(st.ok()) << st.ToString();
    db().Exec("ANALYZE jobs");
  }

  // id -> due_minute, failing the test on a duplicate id or a malformed row.
  std::map<std::string, int64_t> Due(const DueQuery& q) {
    std::map<std::string, int64_t> out;
    const Status st = store_->ForEachDueJob(q, [&](const DueJob& job) {
      const std::string id(job.id);
      EXPECT_EQ(job.topic, "topic." + id);
      EXPECT_EQ(job.key, "key." + id);
      EXPECT_EQ(job.details_json, "{\"id\":\"" + id + "\"}");
      EXPECT_TRUE(out.emplace(id, job.due_minute).second) << "duplicate row for " << id;
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

  std::map<std::string, int64_t> DueAt(int32_t shard, int64_t minute) {
    return Due(DueQuery{shard, minute, minute, kTickMs, TermsForMinute(kIntervals, minute)});
  }

  std::map<std::string, int64_t> DueIn(int32_t shard, int64_t first, int64_t last) {
    return Due(DueQuery{shard, first, last, kTickMs, TermsForRange(kIntervals, first, last)});
  }

  std::unique_ptr<PgJobStore> store_;
};

TEST_F(PgDueQueryTest, HandBuiltMinute) {
  const int32_t s = 7;
  const EpochMs slot = SlotMs(kMinute, s, kTickMs);
  Insert({
      {"every-minute", s, 1, 0},
      {"two-even", s, 2, 0},
      {"two-odd", s, 2, 1},
      {"five-0", s, 5, 0},
      {"five-3", s, 5, 3},
      {"hourly-40", s, 60, 40},
      {"hourly-41", s, 60, 41},
      {"daily-100", s, 1440, 100},
      {"daily-99", s, 1440, 99},
      {"paused", s, 1, 0, true},
      {"future-start", s, 1, 0, false, slot + 1},
      {"start-at-slot", s, 1, 0, false, slot},
      {"ended-at-slot", s, 1, 0, false, std::nullopt, slot},
      {"ends-after-slot", s, 1, 0, false, slot - 60'000, slot + 1},
      {"other-shard", s + 1, 1, 0},
  });
  const std::map<std::string, int64_t> expected = {
      {"daily-100", kMinute}, {"ends-after-slot", kMinute}, {"every-minute", kMinute}, {"five-0", kMinute},
      {"hourly-40", kMinute}, {"start-at-slot", kMinute},   {"two-even", kMinute},
  };
  EXPECT_EQ(DueAt(s, kMinute), expected);
  EXPECT_EQ(DueAt(s + 1, kMinute), (std::map<std::string, int64_t>{{"other-shard", kMinute}}));
  EXPECT_TRUE(DueAt(s + 2, kMinute).empty());
}

TEST_F(PgDueQueryTest, HandBuiltCoalescedRange) {
  const int32_t s = 7;
  Insert({
      {"five-3", s, 5, 3},                                                              // last at M-2
      {"ended-mid", s, 1, 0, false, std::nullopt, SlotMs(kMinute - 4, s, kTickMs)},     // last at M-5
      {"starts-mid", s, 5, 0, false, SlotMs(kMinute - 3, s, kTickMs)},                  // at M
      {"starts-late", s, 5, 0, false, SlotMs(kMinute, s, kTickMs) + 1},                 // never
      {"ended-early", s, 1, 0, false, std::nullopt, SlotMs(kMinute - 10, s, kTickMs)},  // before range
      {"hourly-41", s, 60, 41},                                                         // M-59: outside
      {"paused", s, 1, 0, true},
  });
  const std::map<std::string, int64_t> expected = {
      {"ended-mid", kMinute - 5}, {"five-3", kMinute - 2}, {"starts-mid", kMinute}};
  EXPECT_EQ(DueIn(s, kMinute - 10, kMinute), expected);
}

TEST_F(PgDueQueryTest, SlotBoundariesHoldInTheFarFuture) {
  const int32_t s = 119;
  const int64_t minute = 4'000'000'000;  // year 9575
  const EpochMs slot = SlotMs(minute, s, kTickMs);
  Insert({
      {"start-at-slot", s, 1, 0, false, slot},
      {"start-after-slot", s, 1, 0, false, slot + 1},
      {"end-at-slot", s, 1, 0, false, std::nullopt, slot},
      {"end-after-slot", s, 1, 0, false, std::nullopt, slot + 1},
  });
  EXPECT_EQ(DueAt(s, minute),
            (std::map<std::string, int64_t>{{"end-after-slot", minute}, {"start-at-slot", minute}}));
  EXPECT_EQ(DueIn(s, minute - 5, minute),
            (std::map<std::string, int64_t>{
                {"end-after-slot", minute}, {"end-at-slot", minute - 1}, {"start-at-slot", minute}}));
}

TEST_F(PgDueQueryTest, MatchesThePureRuleOverRandomJobsAndMinutes) {
  std::mt19937_64 rng(20261122);
  const int32_t shards[] = {0, 1, 77, 119};
  const int64_t base = 29'000'000;
  const int64_t span = 3000;
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  // Boundaries matter most: put dates on a slot, or 1 ms either side of one.
  auto near_slot = [&](int32_t shard) { return SlotMs(base + pick(span), shard, kTickMs) + pick(3) - 1; };

  std::vector<TestJob> jobs;
  for (int i = 0; i < 3000; ++i) {
    const int32_t interval = kIntervals[static_cast<size_t>(pick(static_cast<int64_t>(kIntervals.size())))];
    TestJob j("p-" + std::to_string(i), shards[pick(4)], interval, static_cast<int32_t>(pick(interval)));
    j.paused = pick(100) < 15;
    if (pick(100) < 30) j.start_at = near_slot(j.shard);
    if (pick(100) < 30) j.end_at = near_slot(j.shard);
    jobs.push_back(std::move(j));
  }
  Insert(jobs);

  size_t total = 0;
  for (int m = 0; m < 200; ++m) {
    const int64_t minute = base + pick(span);
    for (int32_t shard : shards) {
      std::map<std::string, int64_t> expected;
      for (const TestJob& j : jobs) {
        if (j.shard == shard && IsDueAtSlot(j.interval, j.offset, j.start_at, j.end_at, j.paused, minute,
                                            SlotMs(minute, shard, kTickMs))) {
          expected.emplace(j.id, minute);
        }
      }
      ASSERT_EQ(DueAt(shard, minute), expected) << "shard " << shard << " minute " << minute;
      total += expected.size();
    }
  }
  EXPECT_GT(total, 10'000u);  // the comparison is not vacuous

  // Coalesced ranges: each job at most once, at its latest due minute in the range.
  for (int r = 0; r < 60; ++r) {
    const int64_t last = base + 40 + pick(span - 40);
    const int64_t first = last - pick(40);
    for (int32_t shard : shards) {
      std::map<std::string, int64_t> expected;
      for (const TestJob& j : jobs) {
        if (j.shard != shard) continue;
        for (int64_t minute = last; minute >= first; --minute) {
          if (IsDueAtSlot(j.interval, j.offset, j.start_at, j.end_at, j.paused, minute,
                          SlotMs(minute, shard, kTickMs))) {
            expected.emplace(j.id, minute);
            break;
          }
        }
      }
      ASSERT_EQ(DueIn(shard, first, last), expected)
          << "shard " << shard << " minutes " << first << ".." << last;
    }
  }
}

TEST_F(PgDueQueryTest, StreamsALargeShardMinute) {
  db().Exec(
      "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, topic, key, details, src_partition, "
      "src_offset) SELECT 'bulk-' || g, 5, 1, 0, 'topic.bulk', '', '{\"n\":' || g || '}', 0, g "
      "FROM generate_series(1, 100000) AS g");
  int64_t rows = 0;
  size_t bytes = 0;
  const Status st = store_->ForEachDueJob(
      DueQuery{5, kMinute, kMinute, kTickMs, TermsForMinute(kIntervals, kMinute)}, [&](const DueJob& job) {
        ++rows;
        bytes += job.id.size() + job.details_json.size();
      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rows, 100'000);
  EXPECT_GT(bytes, 1'000'000u);
}

// The rows come one FETCH ahead (pg_due_query_stream.cc): a shard-minute that is not a multiple
// of the fetch size hands out every row once, the last short batch included.
TEST_F(PgDueQueryTest, HandsOutEveryRowOnceAcrossFetches) {
  constexpr int kRows = 2 * pg_queries::kDueJobsFetchRows + 1;
  db().Exec(
      "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, topic, key, details, src_partition, "
      "src_offset) SELECT 'f-' || g, 7, 1, 0, 'topic.f', '', '{}', 0, g FROM generate_series(1, " +
      std::to_string(kRows) + ") AS g");
  std::set<std::string> ids;
  int64_t rows = 0;
  const Status st = store_->ForEachDueJob(DueQuery{7, kMinute, kMinute, kTickMs, TermsForMinute(kIntervals, kMinute)},
                                          [&](const DueJob& job) {
                                            ++rows;
                                            ids.emplace(job.id);
                                          });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rows, kRows);
  EXPECT_EQ(ids.size(), static_cast<size_t>(kRows));
}

// A callback that throws while the next FETCH is on its way: the stream drops its connection and
// the next query runs on a new one.
TEST_F(PgDueQueryTest, CallbackExceptionWithAFetchInFlightLeavesTheStoreUsable) {
  constexpr int kRows = 2 * pg_queries::kDueJobsFetchRows + 1;
  db().Exec(
      "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, topic, key, details, src_partition, "
      "src_offset) SELECT 'x-' || g, 8, 1, 0, 'topic.x-' || g, 'key.x-' || g, '{\"id\":\"x-' || g || '\"}', 0, g "
      "FROM generate_series(1, " +
      std::to_string(kRows) + ") AS g");
  const DueQuery q{8, kMinute, kMinute, kTickMs, TermsForMinute(kIntervals, kMinute)};
  int64_t seen = 0;
  EXPECT_THROW(store_->ForEachDueJob(q,
                                     [&](const DueJob&) {
                                       if (++seen == pg_queries::kDueJobsFetchRows + 10) throw std::runtime_error("boom");
                                     }),
               std::runtime_error);
  EXPECT_EQ(Due(q).size(), static_cast<size_t>(kRows));
}

TEST_F(PgDueQueryTest, EmptyTermsReturnNothingAndBadTermsAreInvalid) {
  Insert({{"every-minute", 3, 1, 0}});
  EXPECT_TRUE(Due(DueQuery{3, kMinute, kMinute, kTickMs, {}}).empty());
  int calls = 0;
  const Status bad = store_->ForEachDueJob(DueQuery{3, kMinute, kMinute, kTickMs, {PhaseTerm{5, {5}}}},
                                           [&](const DueJob&) { ++calls; });
  EXPECT_EQ(bad.code(), Status::Code::kInvalid);
  EXPECT_EQ(calls, 0);
}

// jobs is partitioned by shard (migration 0005): each of the tick's statements reads shard 3's
// partition and nothing else (whether by index or by a scan of the partition is the planner's call).
TEST_F(PgDueQueryTest, ExplainReadsOnlyTheShardsPartition) {
  std::vector<TestJob> jobs;
  for (int i = 0; i < 2000; ++i) {
    jobs.emplace_back("e-" + std::to_string(i), i % kShardCount,
                      kIntervals[static_cast<size_t>(i) % kIntervals.size()], 0);
  }
  Insert(jobs);
  StatusOr<std::string> plan =
      store_->ExplainDueQuery(DueQuery{3, kMinute, kMinute, kTickMs, TermsForMinute(kIntervals, kMinute)});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(ScansPartition(*plan, "jobs_shard_003")) << *plan;
  EXPECT_NE(plan->find("Execution Time"), std::string::npos) << *plan;
  if (db().Exec("SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL")[0][0].as<bool>()) {
    // On Citus each statement goes to the one worker that holds shard 3 (a router query). Its
    // EXPLAIN ANALYZE runs the worker's statement through worker_save_query_explain_analyze,
    // which plans it without the parameter's value, so the worker's plan lists every partition
    // co-located there: which partitions the tick itself reads is not what explain shows there.
    size_t tasks = 0;
    for (size_t at = plan->find("Task Count: "); at != std::string::npos; at = plan->find("Task Count: ", at + 1)) {
      EXPECT_EQ(plan->compare(at, 13, "Task Count: 1"), 0) << *plan;
      ++tasks;
    }
    EXPECT_EQ(tasks, 3u) << *plan;  // priority > 0, = 0 and < 0
    return;
  }
  for (const char* other : {"jobs_shard_002", "jobs_shard_004", "jobs_shard_default", "Append"}) {
    EXPECT_EQ(plan->find(other), std::string::npos) << other << " in\n" << *plan;
  }
}

// `belfry explain` shows the query the tick runs: the statements and parameters of
// PgDueQueryStream::ForEachDueJob, built by the one BuildDueStatements. Once a calendar job is
// stored, the tick's statements have a calendar branch (cron_slots); during a reshard, an old
// shard reads every partition it splits into. Before, explain had interval-only statements of
// its own and bound the shard alone, so neither showed.
TEST_F(PgDueQueryTest, ExplainShowsTheTicksCalendarBranchAndStoredShards) {
  Insert({{"i-3", 3, 1, 0}});
  JobAction cron = UpsertOf(TestJob("c-3", 3, 1, 0), 1);
  const Status planned = PlanCalendarJob(SystemTimeZones(), "0 9 * * MON-FRI", "Europe/Berlin",
                                         *ParseIsoTime("2026-11-01T00:00:00Z"), kIntervals, &cron.spec);
  ASSERT_TRUE(planned.ok()) << planned.ToString();
  ASSERT_TRUE(store_->ApplyActions({cron}).ok());
  ASSERT_GT(db().Exec("SELECT count(*) FROM cron_slots WHERE job_id = 'c-3'")[0][0].as<int>(), 0);

  // Shard 3 of the old layout while 120 -> 240 moves rows: it reads its partition and shard 123's.
  ShardLayout moving;
  moving.from = 120;
  moving.to = 240;
  moving.phase = ShardLayout::Phase::kMoving;
  moving.moved_through = 10;
  const DueQuery q = LayoutDueQuery(moving, kIntervals, 3, kMinute, kMinute);
  ASSERT_EQ(q.stored_shards, (std::vector<int32_t>{3, 123}));

  StatusOr<std::string> plan = store_->ExplainDueQuery(q);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->find("cron_slots"), std::string::npos) << *plan;             // the calendar branch
  EXPECT_NE(plan->find("{3,123}"), std::string::npos) << *plan;                // the stored shards bound
  EXPECT_NE(plan->find("jobs_shard_default"), std::string::npos) << *plan;     // shard 123's rows
  EXPECT_TRUE(ScansPartition(*plan, "jobs_shard_003")) << *plan;
  EXPECT_NE(plan->find("Execution Time"), std::string::npos) << *plan;

  // What explain ran is what the tick runs: the same rows come back from the same statements.
  std::set<std::string> due;
  ASSERT_TRUE(store_->ForEachDueJob(q, [&](const DueJob& j) { due.insert(std::string(j.id)); }).ok());
  EXPECT_EQ(due, (std::set<std::string>{"i-3"}));
}

TEST_F(PgDueQueryTest, CallbackExceptionLeavesTheStoreUsable) {
  Insert({{"a", 3, 1, 0}, {"b", 3, 1, 0}});
  const DueQuery q{3, kMinute, kMinute, kTickMs, TermsForMinute(kIntervals, kMinute)};
  EXPECT_THROW(store_->ForEachDueJob(q, [](const DueJob&) { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_EQ(Due(q).size(), 2u);
}

}  // namespace
}  // namespace belfry
