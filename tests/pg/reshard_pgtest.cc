// `belfry reshard`'s database steps (PgReshard; docs/resharding.md) on the real server: the
// partitions, the move of each old shard, the cut-over's new shard rows, and the tick query
// during the move, which must see each job of an old shard once however far the move has gone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <pqxx/connection>
#include <pqxx/transaction>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/calendar_schedule.h"
#include "core/shard_hash.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "migrated_database_test.h"
#include "pg/migrator.h"
#include "pg/pg_job_store.h"
#include "pg/pg_reshard.h"
#include "pg/pg_reshard_queries.h"
#include "pg/pg_schema_queries.h"

namespace belfry {
namespace {

constexpr int64_t kMinute = 29'000'260;
const std::vector<int32_t> kIntervals = {1, 2, 5, 60};

class PgReshardTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
    reshard_ = std::make_unique<PgReshard>(db().url());
  }

  // `n` every-minute jobs, spread over the 120 shards by their ids.
  std::vector<std::string> InsertJobs(int n) {
    std::vector<JobAction> actions;
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      JobAction a;
      a.kind = JobAction::Kind::kUpsert;
      a.id = "rj-" + std::to_string(i);
      a.spec.id = a.id;
      a.spec.interval_minutes = 1;
      a.spec.offset_minutes = 0;
      a.spec.shard = ShardForId(a.id, 120);
      a.spec.topic = "t";
      a.source = SourcePosition{0, i, 0};
      actions.push_back(a);
      ids.push_back(a.id);
    }
    const Status st = store_->ApplyActions(actions);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return ids;
  }

  std::map<std::string, int32_t> StoredShards() {
    std::map<std::string, int32_t> out;
    for (const pqxx::row& r : db().Exec("SELECT id, shard FROM jobs")) out[r[0].as<std::string>()] = r[1].as<int32_t>();
    return out;
  }

  // The ids the tick query returns for firing shard `shard` of kMinute reading `stored`.
  std::multiset<std::string> Due(int32_t shard, std::vector<int32_t> stored) {
    DueQuery q{shard, kMinute, kMinute, 500, TermsForMinute(kIntervals, kMinute)};
    q.stored_shards = std::move(stored);
    std::multiset<std::string> out;
    const Status st = store_->ForEachDueJob(q, [&](const DueJob& j) { out.insert(std::string(j.id)); });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

  // An upsert of a one-shot due at `run_at` (in its minute), that may fire late up to
  // `late_limit_minute`.
  static JobAction OneShot(const std::string& id, int32_t shard, EpochMs run_at, EpochMs scheduled_for_ms,
                           int64_t late_limit_minute) {
    JobAction a;
    a.kind = JobAction::Kind::kUpsert;
    a.id = id;
    a.spec.id = id;
    a.spec.shard = shard;
    a.spec.topic = "t";
    a.spec.interval_minutes = 0;
    a.spec.offset_explicit = true;
    a.spec.run_at = run_at;
    a.spec.run_minute = EpochMinuteOf(run_at);
    a.spec.scheduled_for_ms = scheduled_for_ms;
    a.spec.late_limit_minute = late_limit_minute;
    a.source = SourcePosition{0, 1, 0};
    return a;
  }

  std::unique_ptr<PgJobStore> store_;
  std::unique_ptr<PgReshard> reshard_;
};

TEST_F(PgReshardTest, BeginCreatesThePartitionsAndRecordsTheMoveOnce) {
  StatusOr<ShardLayout> l = reshard_->Read();
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->phase, ShardLayout::Phase::kStable);
  EXPECT_EQ(l->from, 120);
  EXPECT_FALSE(reshard_->Begin(180).ok());  // not a multiple
  l = reshard_->Begin(240);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->phase, ShardLayout::Phase::kMoving);
  EXPECT_EQ(l->moved_through, -1);
  EXPECT_EQ(db().Exec("SELECT count(*) FROM pg_inherits WHERE inhparent = 'jobs'::regclass")[0][0].as<int64_t>(),
            241);  // 240 shards and the default
  // Attached, not created as a partition: each has the same indexes as an original one.
  const auto indexes = [&](const std::string& table) {
    return db().Exec("SELECT count(*) FROM pg_indexes WHERE tablename = '" + table + "'")[0][0].as<int64_t>();
  };
  EXPECT_GT(indexes("jobs_shard_007"), 0);
  EXPECT_EQ(indexes("jobs_shard_200"), indexes("jobs_shard_007"));
  EXPECT_TRUE(reshard_->Begin(240).ok());                  // again: carries on
  StatusOr<ShardLayout> other = reshard_->Begin(480);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Status::Code::kFailedPrecondition);
  // Nothing to cut over before the move.
  EXPECT_FALSE(reshard_->CutOver(kMinute * 60'000, 120'000).ok());
}

TEST_F(PgReshardTest, EachJobIsSeenOnceByItsOldShardHoweverFarTheMoveHasGone) {
  const std::vector<std::string> ids = InsertJobs(2000);
  ASSERT_TRUE(reshard_->Begin(240).ok());
  // The jobs of old shard 3, and how many of them move.
  std::multiset<std::string> of_shard3;
  int moving = 0;
  for (const std::string& id : ids) {
    if (ShardForId(id, 120) != 3) continue;
    of_shard3.insert(id);
    moving += ShardForId(id, 240) != 3;
  }
  ASSERT_GT(moving, 0);
  int64_t moved_total = 0;
  for (int32_t s = 0; s < 120; ++s) {
    StatusOr<int64_t> moved = reshard_->MoveNextShard();
    ASSERT_TRUE(moved.ok()) << s << ": " << moved.status().ToString();
    moved_total += *moved;
    StatusOr<ShardLayout> l = reshard_->Read();
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->moved_through, s);
    if (s == 2 || s == 3 || s == 119) {
      // Every row is where the record says, and old shard 3's query sees each of its jobs once.
      for (const auto& [id, shard] : StoredShards()) ASSERT_EQ(shard, StoredShard(id, *l)) << id;
      EXPECT_EQ(Due(3, StoredShardsOf(*l, kMinute, 3)), of_shard3) << "moved through " << s;
      if (s >= 3) EXPECT_EQ(Due(3, {3}).size(), of_shard3.size() - moving) << "the negative control";
    }
  }
  EXPECT_NEAR(static_cast<double>(moved_total), 1000.0, 120.0);  // about half
  EXPECT_FALSE(reshard_->MoveNextShard().ok());                  // nothing left

  StatusOr<ShardLayout> cut = reshard_->CutOver(kMinute * 60'000 + 30'000, 120'000);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(cut->phase, ShardLayout::Phase::kCutover);
  EXPECT_EQ(cut->cutover_minute, kMinute + 3);  // the first minute starting >= 2 min ahead
  EXPECT_EQ(db().Exec("SELECT count(*) FROM shard_state WHERE shard >= 120 AND fired_through = " +
                      std::to_string(kMinute + 2))[0][0]
                .as<int64_t>(),
            120);
  EXPECT_EQ(db().Exec("SELECT value FROM belfry_meta WHERE key = 'shard_count'")[0][0].as<std::string>(), "240");
  // From the cut-over on, each new shard reads only its own partition and finds its own jobs.
  std::multiset<std::string> new_shard_123;
  for (const std::string& id : ids) {
    if (ShardForId(id, 240) == 123) new_shard_123.insert(id);
  }
  EXPECT_EQ(Due(123, StoredShardsOf(*cut, kMinute + 3, 123)), new_shard_123);
  // Cutting over again changes nothing.
  StatusOr<ShardLayout> again = reshard_->CutOver(kMinute * 60'000 + 90'000, 120'000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cutover_minute, kMinute + 3);
}

// The move rewrites each moving row as a DELETE and an INSERT (Citus cannot UPDATE a distribution
// column), so it names every column: the lists in pg_reshard_queries.h must be the tables' own
// (all but the key columns and the generated phase), and a moved row must come out equal to what
// went in, every column but shard, in jobs and in cron_slots.
TEST_F(PgReshardTest, TheMoveCopiesEveryColumn) {
  const auto listed = [](const std::string& columns, std::vector<std::string> head) {
    std::istringstream in(columns);
    for (std::string c; std::getline(in, c, ',');) head.push_back(c.substr(c.find_first_not_of(' ')));
    return head;
  };
  const auto catalog = [&](const std::string& table) {
    std::vector<std::string> out;
    for (const pqxx::row& r : db().Exec("SELECT attname FROM pg_attribute WHERE attrelid = '" + table +
                                        "'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''"
                                        " ORDER BY attnum")) {
      out.push_back(r[0].as<std::string>());
    }
    return out;
  };
  EXPECT_EQ(listed(BELFRY_RESHARD_MOVED_JOB_COLUMNS, {"id", "shard"}), catalog("jobs"));
  EXPECT_EQ(listed(BELFRY_RESHARD_MOVED_SLOT_COLUMNS, {"shard"}), catalog("cron_slots"));

  // Two rows of old shard 7 that move to 127, between them every column off its default: a
  // calendar job with its slot, and a retry row.
  std::vector<std::string> ids;
  for (int i = 0; ids.size() < 2; ++i) {
    const std::string candidate = "cols-" + std::to_string(i);
    if (ShardForId(candidate, 120) == 7 && ShardForId(candidate, 240) == 127) ids.push_back(candidate);
  }
  const std::string common =
      "7, 'owner-a', 'topic-a', 'key-a', '{\"d\": 1}', '2026-01-01 00:00:00+00', '2027-01-01 00:00:00+00', 5, true, 3,"
      " 77, '2026-02-01 00:00:01.5+00', '2026-02-02 00:00:02.25+00', 4, 1500, 1.5, 90000, false, 'why', 'who',"
      " '2026-02-03 00:00:00+00', 9, 2, '2026-02-04 00:00:00+00', '2026-12-31 00:00:00+00',"
      " '2026-01-02 00:00:00+00', '{\"team\": \"a\"}'";
  db().Exec(
      "INSERT INTO jobs (id, shard, owner, topic, key, details, start_at, end_at, priority, paused, src_partition,"
      " src_offset, created_at, updated_at, max_retries, retry_initial_ms, retry_multiplier, retry_max_ms,"
      " offset_pinned, pause_reason, pause_actor, paused_at, max_fires, fires_before, fires_from, requested_end_at,"
      " requested_start_at, labels, interval_minutes, offset_minutes, cron_expr, time_zone, run_at, run_minute,"
      " scheduled_for_ms, attempt, retry_of) VALUES"
      " ('" + ids[0] + "', " + common + ", 0, 0, '0 9 * * MON-FRI', 'Europe/Berlin', NULL, NULL, NULL, 0, NULL),"
      " ('" + ids[1] + "', " + common + ", 3, 0, NULL, NULL, '2026-03-01 00:00:00+00', " + std::to_string(kMinute) +
      ", " + std::to_string(kMinute * 60'000 + 3'500) + ", 2, 'parent')");
  db().Exec("INSERT INTO cron_slots (shard, key, job_id, hour_mask, dom_mask, month_mask, dow_mask, day_or) VALUES"
            " (7, 4242, '" + ids[0] + "', 512, -2, 8190, 62, true)");
  const auto rows = [&]() {
    std::map<std::string, std::string> out;
    for (const pqxx::row& r : db().Exec("SELECT id, shard, to_jsonb(j) - 'shard' FROM jobs j")) {
      out["job " + r[0].as<std::string>() + " in " + r[1].as<std::string>()] = r[2].as<std::string>();
    }
    for (const pqxx::row& r : db().Exec("SELECT job_id, shard, to_jsonb(c) - 'shard' FROM cron_slots c")) {
      out["slot " + r[0].as<std::string>() + " in " + r[1].as<std::string>()] = r[2].as<std::string>();
    }
    return out;
  };
  std::map<std::string, std::string> expected;
  for (const auto& [k, v] : rows()) expected[k.substr(0, k.rfind(" in ")) + " in 127"] = v;
  ASSERT_EQ(expected.size(), 3u);

  ASSERT_TRUE(reshard_->Begin(240).ok());
  for (int s = 0; s < 8; ++s) {
    StatusOr<int64_t> moved = reshard_->MoveNextShard();
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    EXPECT_EQ(*moved, s == 7 ? 2 : 0) << s;
  }
  EXPECT_EQ(rows(), expected);
}

// Commands during the move name each job's stored shard by the record they read: an update of a
// moved job updates it where it is (no second row), a delete finds it, and a new job goes where
// the record says, under the new layout once its old shard has moved.
TEST_F(PgReshardTest, CommandsDuringTheMoveFindTheirJobsWhereTheRecordSays) {
  const std::vector<std::string> ids = InsertJobs(400);
  ASSERT_TRUE(reshard_->Begin(240).ok());
  for (int s = 0; s < 60; ++s) ASSERT_TRUE(reshard_->MoveNextShard().ok());
  StatusOr<ShardLayout> l = reshard_->Read();
  ASSERT_TRUE(l.ok());
  std::string moved_id, waiting_id;
  for (const std::string& id : ids) {
    if (moved_id.empty() && ShardForId(id, 120) < 60 && ShardForId(id, 240) >= 120) moved_id = id;
    if (waiting_id.empty() && ShardForId(id, 120) >= 60 && ShardForId(id, 240) >= 120) waiting_id = id;
  }
  ASSERT_FALSE(moved_id.empty());
  ASSERT_FALSE(waiting_id.empty());
  // Re-upsert both with a new interval, as the parser makes them: spec.shard from the config (120).
  std::vector<JobAction> updates;
  for (const std::string& id : {moved_id, waiting_id}) {
    JobAction a;
    a.kind = JobAction::Kind::kUpsert;
    a.id = id;
    a.spec.id = id;
    a.spec.interval_minutes = 5;
    a.spec.shard = ShardForId(id, 120);
    a.spec.topic = "t";
    a.source = SourcePosition{1, 1000 + static_cast<int64_t>(updates.size()), 0};
    updates.push_back(a);
  }
  ASSERT_TRUE(store_->ApplyActions(updates).ok());
  for (const std::string& id : {moved_id, waiting_id}) {
    const pqxx::result r = db().Exec("SELECT shard, interval_minutes FROM jobs WHERE id = '" + id + "'");
    ASSERT_EQ(r.size(), 1u) << id << ": one row, updated where it is";
    EXPECT_EQ(r[0][0].as<int32_t>(), StoredShard(id, *l)) << id;
    EXPECT_EQ(r[0][1].as<int32_t>(), 5) << id;
  }
  EXPECT_NE(StoredShard(moved_id, *l), ShardForId(moved_id, 120));
  EXPECT_EQ(StoredShard(waiting_id, *l), ShardForId(waiting_id, 120));
  // GetJob finds the moved one in its new partition; a delete removes it.
  StatusOr<std::optional<StoredJob>> got = store_->GetJob(moved_id);
  ASSERT_TRUE(got.ok() && got->has_value());
  JobAction del;
  del.kind = JobAction::Kind::kDelete;
  del.id = moved_id;
  del.source = SourcePosition{1, 2000, 0};
  ASSERT_TRUE(store_->ApplyActions({del}).ok());
  EXPECT_EQ(db().Exec("SELECT count(*) FROM jobs WHERE id = '" + moved_id + "'")[0][0].as<int64_t>(), 0);
}

// A reshard step holds the layout lock exclusive while it moves a shard and records it; a command
// for a new job of that shard waits, then stores it where the committed record says (the new
// shard), never in the old partition behind the move.
TEST_F(PgReshardTest, ACommandWaitsForAReshardStepAndWritesUnderTheRecordItCommits) {
  ASSERT_TRUE(reshard_->Begin(240).ok());
  StatusOr<ShardLayout> l = reshard_->Read();
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->moved_through, -1);
  std::string id;
  for (int i = 0; id.empty(); ++i) {
    const std::string candidate = "lock-" + std::to_string(i);
    if (ShardForId(candidate, 120) == 0 && ShardForId(candidate, 240) == 120) id = candidate;
  }
  // The step, by hand: shard 0 has no rows, so moving it is only recording it.
  pqxx::connection step_conn(db().url());
  pqxx::work step(step_conn);
  step.exec_params("SELECT pg_advisory_xact_lock($1::bigint)", pg_queries::kLayoutLockKey);
  ShardLayout moved = *l;
  moved.moved_through = 0;
  step.exec_params("UPDATE belfry_meta SET value = $1 WHERE key = 'layout'", EncodeShardLayout(moved));

  JobAction a;
  a.kind = JobAction::Kind::kUpsert;
  a.id = id;
  a.spec.id = id;
  a.spec.interval_minutes = 1;
  a.spec.shard = ShardForId(id, 120);
  a.spec.topic = "t";
  a.source = SourcePosition{0, 1, 0};
  std::atomic<bool> applied{false};
  Status applied_status = Status::Ok();
  std::thread command([&] {
    applied_status = store_->ApplyActions({a});
    applied = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(applied) << "the command applied while a reshard step held the layout lock";
  step.commit();
  command.join();
  ASSERT_TRUE(applied_status.ok()) << applied_status.ToString();
  EXPECT_EQ(StoredShards().at(id), 120) << "stored behind the move, in old shard 0";
}

// A node's config names the shard count of a new database; once a reshard has begun, the record
// rules, and a node whose config still says 120 may start (and a 240 one too).
TEST_F(PgReshardTest, OnceAReshardHasBegunAnyConfiguredShardCountMayStart) {
  EXPECT_FALSE(CheckSchema(db().url(), BELFRY_MIGRATIONS_DIR, 240).ok());
  ASSERT_TRUE(CheckSchema(db().url(), BELFRY_MIGRATIONS_DIR, 120).ok());
  ASSERT_TRUE(reshard_->Begin(240).ok());
  EXPECT_TRUE(CheckSchema(db().url(), BELFRY_MIGRATIONS_DIR, 120).ok());
  EXPECT_TRUE(CheckSchema(db().url(), BELFRY_MIGRATIONS_DIR, 240).ok());
}

// A late one-shot of a moved job is placed by the progress of the shard that fires its minute,
// the old one, not by its new (stored) shard's row, which does not exist yet.
TEST_F(PgReshardTest, ALateOneShotOfAMovedJobIsPlacedByItsFiringShard) {
  ASSERT_TRUE(reshard_->Begin(240).ok());
  for (int s = 0; s < 10; ++s) ASSERT_TRUE(reshard_->MoveNextShard().ok());
  std::string id;
  for (int i = 0; id.empty(); ++i) {
    const std::string candidate = "late-" + std::to_string(i);
    if (ShardForId(candidate, 120) == 7 && ShardForId(candidate, 240) == 127) id = candidate;
  }
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(kMinute + 3) + " WHERE shard = 7");
  const JobAction a = OneShot(id, 7, (kMinute + 1) * 60'000 + 1234, SlotMs(kMinute + 1, 7, 500), kMinute + 10);
  ASSERT_TRUE(store_->ApplyActions({a}).ok());
  const pqxx::result r = db().Exec("SELECT shard, run_minute FROM jobs WHERE id = '" + id + "'");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0][0].as<int32_t>(), 127);             // stored under the new layout: its shard moved
  EXPECT_EQ(r[0][1].as<int64_t>(), kMinute + 4);     // after old shard 7's progress
  // And old shard 7's query of that minute finds it.
  const ShardLayout l = *reshard_->Read();
  DueQuery q{7, kMinute + 4, kMinute + 4, 500, TermsForMinute(kIntervals, kMinute + 4)};
  q.stored_shards = StoredShardsOf(l, kMinute + 4, 7);
  int found = 0;
  ASSERT_TRUE(store_->ForEachDueJob(q, [&](const DueJob& j) { found += std::string(j.id) == id; }).ok());
  EXPECT_EQ(found, 1);
}

// Reshards chain: 120 -> 240, then 240 -> 480 from the cut-over record, but only once no firing
// can use the 120-shard layout again (every old shard fired through C - 1, no debt before C).
TEST_F(PgReshardTest, ASecondReshardBeginsOnceEveryMinuteBeforeTheFirstCutOverIsFired) {
  const std::vector<std::string> ids = InsertJobs(1200);
  ASSERT_TRUE(reshard_->Begin(240).ok());
  for (int s = 0; s < 120; ++s) ASSERT_TRUE(reshard_->MoveNextShard().ok());
  const StatusOr<ShardLayout> cut = reshard_->CutOver(kMinute * 60'000, 60'000);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  const int64_t c = cut->cutover_minute;
  EXPECT_EQ(reshard_->Begin(480).status().code(), Status::Code::kFailedPrecondition) << "old shards not fired yet";

  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(c - 1) + " WHERE shard < 120 AND shard <> 5");
  Status refused = reshard_->Begin(480).status();
  EXPECT_EQ(refused.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("shard(s) 5 "), std::string::npos) << refused.ToString();
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(c + 4) + " WHERE shard = 5");
  db().Exec("UPDATE shard_state SET debt = int8multirange(int8range(" + std::to_string(c - 3) + ", " +
            std::to_string(c - 2) + ")) WHERE shard = 200");
  refused = reshard_->Begin(480).status();
  EXPECT_NE(refused.message().find("shard(s) 200 "), std::string::npos) << "a minute before C owed in debt";
  // Debt from C on belongs to the new layout and does not hold the next reshard back.
  db().Exec("UPDATE shard_state SET debt = int8multirange(int8range(" + std::to_string(c) + ", " +
            std::to_string(c + 1) + ")) WHERE shard = 200");

  StatusOr<ShardLayout> second = reshard_->Begin(480);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->from, 240);
  EXPECT_EQ(second->to, 480);
  EXPECT_EQ(second->phase, ShardLayout::Phase::kMoving);
  // Halfway through the second move, firing shard 200 of the 240 layout sees each of its jobs once.
  std::multiset<std::string> of_200;
  for (const std::string& id : ids) {
    if (ShardForId(id, 240) == 200) of_200.insert(id);
  }
  for (int s = 0; s < 210; ++s) ASSERT_TRUE(reshard_->MoveNextShard().ok()) << s;
  const StatusOr<ShardLayout> half = reshard_->Read();
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(Due(200, StoredShardsOf(*half, c + 5, 200)), of_200);
  for (int s = 210; s < 240; ++s) ASSERT_TRUE(reshard_->MoveNextShard().ok()) << s;
  const StatusOr<ShardLayout> cut2 = reshard_->CutOver((c + 10) * 60'000, 60'000);
  ASSERT_TRUE(cut2.ok()) << cut2.status().ToString();
  EXPECT_EQ(cut2->to, 480);
  for (const auto& [id, shard] : StoredShards()) ASSERT_EQ(shard, ShardForId(id, 480)) << id;
  EXPECT_EQ(db().Exec("SELECT count(*) FROM shard_state")[0][0].as<int64_t>(), 480);
  EXPECT_EQ(db().Exec("SELECT value FROM belfry_meta WHERE key = 'shard_count'")[0][0].as<std::string>(), "480");
}

// Rows placed late across the cut-over C. Old shard 7 fired C-1, then (its row shared with new
// shard 7) C and C+1; new shard 127, which fires the moved job from C on, has fired through C+5.
// A late one-shot and a manual trigger planned for C-1 would be moved by old shard 7's progress
// to C+2, a minute that shard 127 has already fired: they go on to C+6, by shard 127's progress.
TEST_F(PgReshardTest, ALateRowMovedPastTheCutOverFollowsTheNewShardsProgress) {
  std::string job;
  for (const std::string& id : InsertJobs(600)) {
    if (ShardForId(id, 240) == 127) job = id;
  }
  ASSERT_FALSE(job.empty());
  ASSERT_TRUE(reshard_->Begin(240).ok());
  for (int s = 0; s < 120; ++s) ASSERT_TRUE(reshard_->MoveNextShard().ok());
  const StatusOr<ShardLayout> cut = reshard_->CutOver(kMinute * 60'000, 60'000);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  const int64_t c = cut->cutover_minute;
  ASSERT_EQ(c, kMinute + 1);
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(c + 1) + " WHERE shard = 7");
  db().Exec("UPDATE shard_state SET fired_through = " + std::to_string(c + 5) + " WHERE shard = 127");

  std::string one_shot;
  for (int i = 0; one_shot.empty(); ++i) {
    const std::string candidate = "late-" + std::to_string(i);
    if (ShardForId(candidate, 240) == 127) one_shot = candidate;
  }
  const JobAction a = OneShot(one_shot, 127, (c - 1) * 60'000 + 3'500, (c - 1) * 60'000 + 3'500, c + 10);
  ASSERT_TRUE(store_->ApplyActions({a}).ok());

  ManualFire f;
  f.kind = ManualFire::Kind::kTrigger;
  f.id = job;
  f.source = SourcePosition{1, 5, (c - 1) * 60'000 + 1'000};  // old shard 7's slot at 3.5 s: C-1
  const StatusOr<std::vector<ManualFireResult>> fired = store_->ApplyManualFires({f});
  ASSERT_TRUE(fired.ok()) << fired.status().ToString();
  ASSERT_EQ((*fired)[0].slots, 1);

  for (const std::string& id : {one_shot, job + "#trigger#" + std::to_string((c - 1) * 60'000 + 1'000)}) {
    const pqxx::result r = db().Exec("SELECT shard, run_minute FROM jobs WHERE id = '" + id + "'");
    ASSERT_EQ(r.size(), 1u) << id;
    EXPECT_EQ(r[0][0].as<int32_t>(), 127) << id;
    EXPECT_EQ(r[0][1].as<int64_t>(), c + 6) << id << ": after shard 127's progress, not old shard 7's";
  }
}

}  // namespace
}  // namespace belfry
