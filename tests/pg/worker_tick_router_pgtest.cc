// PgWorkerTickRouter on the real server: on Citus (the citus.pg_test twin) each tick query goes
// to the worker that holds its shard, named by the coordinator's metadata, and returns exactly
// what the coordinator returns; on a plain PostgreSQL every query stays on the one server.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/calendar_schedule.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "migrated_database_test.h"
#include "pg/connection_options.h"
#include "pg/pg_due_query_stream.h"
#include "pg/pg_job_store.h"
#include "pg/pg_worker_tick_router.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

constexpr int64_t kMinute = 29'000'260;

class PgWorkerTickRouterTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    std::vector<JobAction> actions;
    for (int i = 0; i < 600; ++i) {
      JobAction a;
      a.kind = JobAction::Kind::kUpsert;
      a.id = "wr-" + std::to_string(i);
      a.spec.id = a.id;
      a.spec.interval_minutes = 1;
      a.spec.shard = ShardForId(a.id, kMigratedShardCount);
      a.spec.topic = "t";
      a.source = SourcePosition{0, i, 0};
      actions.push_back(a);
    }
    PgJobStore store(db().url());
    ASSERT_TRUE(store.ApplyActions(actions).ok());
    citus_ = db().Exec("SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL")[0][0].as<bool>();
  }

  static std::multiset<std::string> Due(const DueQuery& q, PgDueQueryStream& stream) {
    std::multiset<std::string> out;
    const Status st = stream.ForEachDueJob(q, [&](const DueJob& j) { out.insert(std::string(j.id)); });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

  bool citus_ = false;
};

TEST_F(PgWorkerTickRouterTest, EachShardIsReadWhereItsRowsLiveAndReturnsWhatTheCoordinatorDoes) {
  PgDueQueryStream coordinator(PgConninfo(db().url()), SystemTimeZones());
  PgWorkerTickRouter router(PgConninfo(db().url()), WorkerTickOptions{}, SystemTimeZones());
  std::set<std::string> routes;
  for (int32_t shard = 0; shard < kMigratedShardCount; shard += 7) {
    const DueQuery q{shard, kMinute, kMinute, 500, TermsForMinute({1}, kMinute)};
    std::multiset<std::string> via_router;
    const Status st = router.ForEachDueJob(q, [&](const DueJob& j) { via_router.insert(std::string(j.id)); },
                                           coordinator);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(via_router, Due(q, coordinator)) << "shard " << shard;
    routes.insert(router.last_route());
    if (citus_) {
      // The worker named by Citus's placement of the shard's group.
      const std::string expected =
          db().Exec("SELECT n.nodename || ':' || n.nodeport FROM pg_dist_placement pl JOIN pg_dist_node n ON "
                    "n.groupid = pl.groupid WHERE pl.shardid = get_shard_id_for_distribution_column('shard_state', " +
                    std::to_string(shard) + "::smallint)")[0][0]
              .as<std::string>();
      EXPECT_EQ(router.last_route(), expected) << "shard " << shard;
    } else {
      EXPECT_EQ(router.last_route(), "") << "no Citus: the one server serves";
    }
  }
  if (citus_) EXPECT_EQ(routes.size(), 2u) << "both workers served some shards";
}

TEST_F(PgWorkerTickRouterTest, TurnedOffEveryQueryGoesThroughTheCoordinator) {
  PgDueQueryStream coordinator(PgConninfo(db().url()), SystemTimeZones());
  PgWorkerTickRouter router(PgConninfo(db().url()), WorkerTickOptions{.enabled = false}, SystemTimeZones());
  const DueQuery q{3, kMinute, kMinute, 500, TermsForMinute({1}, kMinute)};
  std::multiset<std::string> via_router;
  ASSERT_TRUE(
      router.ForEachDueJob(q, [&](const DueJob& j) { via_router.insert(std::string(j.id)); }, coordinator).ok());
  EXPECT_EQ(router.last_route(), "");
  EXPECT_EQ(via_router, Due(q, coordinator));
  EXPECT_FALSE(via_router.empty());
}

}  // namespace
}  // namespace belfry
