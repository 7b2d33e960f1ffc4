#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/shard_hash.h"
#include "migrated_database_test.h"
#include "pg/connection_options.h"
#include "pg/pg_job_store.h"

namespace belfry {
namespace {

constexpr int32_t kShardCount = 120;

JobAction Upsert(const std::string& id, int32_t interval, int32_t offset, int64_t src_offset,
                 int32_t partition = 0) {
  JobAction a;
  a.kind = JobAction::Kind::kUpsert;
  a.id = id;
  a.spec.id = id;
  a.spec.owner = "owner-a";
  a.spec.interval_minutes = interval;
  a.spec.offset_minutes = offset;
  a.spec.shard = ShardForId(id, kShardCount);
  a.spec.topic = "tracking.poll";
  a.spec.details_json = "{}";
  a.source = SourcePosition{partition, src_offset, 1'700'000'000'000};
  return a;
}

JobAction Delete(const std::string& id, int64_t src_offset, int32_t partition = 0) {
  JobAction a;
  a.kind = JobAction::Kind::kDelete;
  a.id = id;
  a.source = SourcePosition{partition, src_offset, 0};
  return a;
}

JobAction SetPaused(const std::string& id, bool paused, int64_t src_offset, int32_t partition = 0) {
  JobAction a;
  a.kind = JobAction::Kind::kSetPaused;
  a.id = id;
  a.paused = paused;
  a.source = SourcePosition{partition, src_offset, 0};
  return a;
}

class PgJobStoreTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
  }

  // The server drops the store's connections. Only client backends of our own role: an
  // autovacuum worker in the database runs as a superuser, and signalling it fails the whole
  // statement ("must be a superuser to terminate superuser process"), which a busy server makes
  // likely. The call waits (up to 10 s) until each backend has exited.
  void DropStoreConnections() {
    db().Exec(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND backend_type = 'client backend' AND usename = current_user");
  }

  void Apply(const std::vector<JobAction>& actions) {
    const Status st = store_->ApplyActions(actions);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  StoredJob Get(const std::string& id) {
    StatusOr<std::optional<StoredJob>> job = store_->GetJob(id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    EXPECT_TRUE(job.ok() && job->has_value()) << id << " is missing";
    return job.ok() && job->has_value() ? **job : StoredJob{};
  }

  bool Exists(const std::string& id) {
    StatusOr<std::optional<StoredJob>> job = store_->GetJob(id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() && job->has_value();
  }

  // Every column of every row, updated_at included, at full precision.
  std::string Dump() {
    std::string out;
    for (const auto& row : db().Exec("SELECT row_to_json(j)::text FROM jobs j ORDER BY id")) {
      out += row[0].as<std::string>() + "\n";
    }
    return out;
  }

  std::unique_ptr<PgJobStore> store_;
};

TEST_F(PgJobStoreTest, UpsertInsertsEveryField) {
  JobAction a = Upsert("shipment-42-poll", 15, 7, 10, 3);
  a.spec.owner = "tracking-svc";
  a.spec.key = "shipment-42";
  a.spec.details_json =
      R"({"shipmentId":42,"note":"caf\u00e9 \"quoted\" é ✓","nested":{"a":[1,2.5,null]},"nul":"\u0000"})";
  a.spec.start_at = 1'779'449'852'123;
  a.spec.end_at = 1'779'549'852'999;
  a.spec.priority = 5;
  Apply({a});

  const StoredJob job = Get("shipment-42-poll");
  EXPECT_EQ(job.spec.id, "shipment-42-poll");
  EXPECT_EQ(job.spec.owner, "tracking-svc");
  EXPECT_EQ(job.spec.interval_minutes, 15);
  EXPECT_EQ(job.spec.offset_minutes, 7);
  EXPECT_EQ(job.spec.shard, ShardForId("shipment-42-poll", kShardCount));
  EXPECT_EQ(job.spec.topic, "tracking.poll");
  EXPECT_EQ(job.spec.key, "shipment-42");
  EXPECT_EQ(job.spec.details_json, a.spec.details_json);  // verbatim
  EXPECT_EQ(job.spec.start_at, a.spec.start_at);
  EXPECT_EQ(job.spec.end_at, a.spec.end_at);
  EXPECT_EQ(job.spec.priority, 5);
  EXPECT_FALSE(job.paused);
  EXPECT_EQ(job.source.partition, 3);
  EXPECT_EQ(job.source.offset, 10);
  EXPECT_GT(job.created_at, 1'700'000'000'000);
  EXPECT_EQ(job.created_at, job.updated_at);

  ASSERT_TRUE(store_->GetJob("nope").ok());
  EXPECT_FALSE(store_->GetJob("nope")->has_value());
  EXPECT_EQ(*store_->CountJobs(), 1);
}

// The admin API's one-statement read: the same job GetJob returns, with its job_stats row.
TEST_F(PgJobStoreTest, GetJobAndStatsReadsTheJobAndItsCountersTogether) {
  db().Exec("TRUNCATE job_stats");
  JobAction a = Upsert("viewed", 15, 7, 10, 3);
  a.spec.owner = "ops";
  Apply({a});
  StatusOr<std::optional<JobAndStats>> before = store_->GetJobAndStats("viewed");
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE(before->has_value());
  EXPECT_TRUE((*before)->stats_read);
  EXPECT_FALSE((*before)->stats.has_value());  // no report yet
  const StoredJob plain = Get("viewed");
  EXPECT_EQ((*before)->job.spec.id, plain.spec.id);
  EXPECT_EQ((*before)->job.spec.owner, "ops");
  EXPECT_EQ((*before)->job.updated_at, plain.updated_at);
  EXPECT_EQ((*before)->job.spec.interval_minutes, 15);

  db().Exec(
      "INSERT INTO job_stats (job_id, last_status, last_scheduled_for_ms, last_attempt, last_error,"
      " last_finished_at, consecutive_failures, total_succeeded, total_failed, last_success_scheduled_for_ms)"
      " VALUES ('viewed', 'failed', 1779449852500, 2, 'boom', to_timestamp(1779449853.25), 3, 7, 4, NULL)");
  StatusOr<std::optional<JobAndStats>> after = store_->GetJobAndStats("viewed");
  ASSERT_TRUE(after.ok() && after->has_value());
  ASSERT_TRUE((*after)->stats.has_value());
  const JobStats& st = *(*after)->stats;
  EXPECT_EQ(st.job_id, "viewed");
  EXPECT_EQ(st.last_status, ExecutionStatus::kFailed);
  EXPECT_EQ(st.last_scheduled_for_ms, 1779449852500);
  EXPECT_EQ(st.last_attempt, 2);
  EXPECT_EQ(st.last_error, "boom");
  EXPECT_EQ(st.last_finished_at, 1779449853250);
  EXPECT_EQ(st.consecutive_failures, 3);
  EXPECT_EQ(st.total_succeeded, 7);
  EXPECT_EQ(st.total_failed, 4);
  EXPECT_FALSE(st.last_success_scheduled_for_ms.has_value());

  StatusOr<std::optional<JobAndStats>> missing = store_->GetJobAndStats("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

// Issue 33: a refused trigger becomes its job's last delivery error (the latest one wins), and the
// job view reads it back; a job with none reads none.
TEST_F(PgJobStoreTest, RecordDeliveryErrorIsTheJobViewsLastDeliveryError) {
  db().Exec("TRUNCATE trigger_delivery_errors");
  Apply({Upsert("poisoned", 1, 0, 10, 3), Upsert("healthy", 1, 0, 10, 3)});
  DeliveryErrorRecord e{"poisoned", "out.small", 1779449852500, "Broker: Message size too large", 1779449853000};
  ASSERT_TRUE(store_->RecordDeliveryError(e).ok());
  e.slot_ms += 60'000;
  e.at_ms += 60'000;
  e.error = "Broker: Topic authorization failed";
  ASSERT_TRUE(store_->RecordDeliveryError(e).ok());
  StatusOr<std::optional<JobAndStats>> view = store_->GetJobAndStats("poisoned");
  ASSERT_TRUE(view.ok() && view->has_value()) << view.status().ToString();
  ASSERT_TRUE((*view)->last_delivery_error.has_value());
  const DeliveryErrorRecord& got = *(*view)->last_delivery_error;
  EXPECT_EQ(got.job_id, "poisoned");
  EXPECT_EQ(got.topic, "out.small");
  EXPECT_EQ(got.slot_ms, 1779449912500);
  EXPECT_EQ(got.at_ms, 1779449913000);
  EXPECT_EQ(got.error, "Broker: Topic authorization failed");
  EXPECT_EQ(db().Exec("SELECT count(*) FROM trigger_delivery_errors")[0][0].as<int64_t>(), 1);
  StatusOr<std::optional<JobAndStats>> healthy = store_->GetJobAndStats("healthy");
  ASSERT_TRUE(healthy.ok() && healthy->has_value());
  EXPECT_FALSE((*healthy)->last_delivery_error.has_value());
}

// Issue 33 §1: deleting a job deletes its last delivery error, so that a new job of the same id
// does not show the old one. As for backfills, a delete that leaves the job (re-created by a
// later command of the batch, or a replay of an older offset) leaves its error too.
TEST_F(PgJobStoreTest, DeletingAJobDeletesItsLastDeliveryError) {
  db().Exec("TRUNCATE trigger_delivery_errors");
  Apply({Upsert("gone", 1, 0, 10, 3), Upsert("kept", 1, 0, 11, 3), Upsert("back", 1, 0, 12, 3)});
  for (const char* id : {"gone", "kept", "back"}) {
    ASSERT_TRUE(store_->RecordDeliveryError({id, "out.small", 1, "Broker: Message size too large", 2}).ok());
  }
  Apply({Delete("gone", 20), Delete("back", 21, 3), Upsert("back", 1, 0, 22, 3), Delete("kept", 5, 3)});
  EXPECT_FALSE(Exists("gone"));
  EXPECT_TRUE(Exists("back"));
  EXPECT_TRUE(Exists("kept"));
  EXPECT_EQ(db().Exec("SELECT string_agg(job_id, ',' ORDER BY job_id) FROM trigger_delivery_errors")[0][0]
                .as<std::string>(),
            "back,kept");
  Apply({Upsert("gone", 1, 0, 30, 3)});
  StatusOr<std::optional<JobAndStats>> view = store_->GetJobAndStats("gone");
  ASSERT_TRUE(view.ok() && view->has_value());
  EXPECT_FALSE((*view)->last_delivery_error.has_value()) << "a new job of the same id starts clean";
}

TEST_F(PgJobStoreTest, DatesRoundTripToTheMillisecondUpToYear9999) {
  const std::vector<std::pair<EpochMs, EpochMs>> dates = {
      {0, 1}, {1'779'449'852'123, 1'779'449'852'124}, {123'456'789'012'345, 253'402'300'799'999}};
  for (size_t i = 0; i < dates.size(); ++i) {
    // Built with append: `"d" + std::to_string(i)` trips GCC 12's -Wrestrict false positive at -O3.
    std::string id = "date-";
    id += std::to_string(i);
    JobAction a = Upsert(id, 5, 0, static_cast<int64_t>(i));
    a.spec.start_at = dates[i].first;
    a.spec.end_at = dates[i].second;
    Apply({a});
    const StoredJob job = Get(a.id);
    EXPECT_EQ(job.spec.start_at, dates[i].first);
    EXPECT_EQ(job.spec.end_at, dates[i].second);
  }
}

TEST_F(PgJobStoreTest, UpdateWithSameIntervalKeepsOffsetUnlessExplicit) {
  Apply({Upsert("j", 5, 2, 1)});
  JobAction update = Upsert("j", 5, 4, 2);
  update.spec.topic = "other.topic";
  Apply({update});
  StoredJob job = Get("j");
  EXPECT_EQ(job.spec.offset_minutes, 2);
  EXPECT_EQ(job.spec.topic, "other.topic");
  EXPECT_EQ(job.source.offset, 2);

  JobAction explicit_offset = Upsert("j", 5, 4, 3);
  explicit_offset.spec.offset_explicit = true;
  Apply({explicit_offset});
  EXPECT_EQ(Get("j").spec.offset_minutes, 4);
}

TEST_F(PgJobStoreTest, UpdateWithNewIntervalTakesNewOffset) {
  Apply({Upsert("j", 5, 2, 1)});
  Apply({Upsert("j", 15, 7, 2)});
  const StoredJob job = Get("j");
  EXPECT_EQ(job.spec.interval_minutes, 15);
  EXPECT_EQ(job.spec.offset_minutes, 7);
}

TEST_F(PgJobStoreTest, UpdateKeepsCreatedAtAndMovesUpdatedAt) {
  Apply({Upsert("j", 5, 2, 1)});
  const StoredJob before = Get("j");
  db().Exec("SELECT pg_sleep(0.01)");
  Apply({Upsert("j", 5, 2, 2)});
  const StoredJob after = Get("j");
  EXPECT_EQ(after.created_at, before.created_at);
  EXPECT_GT(after.updated_at, before.updated_at);
}

TEST_F(PgJobStoreTest, ReplaceFreshResetsPausedAndOffset) {
  Apply({Upsert("j", 5, 2, 1)});
  Apply({SetPaused("j", true, 2)});
  ASSERT_TRUE(Get("j").paused);
  JobAction fresh = Upsert("j", 5, 4, 3);
  fresh.replace_fresh = true;
  Apply({fresh});
  const StoredJob job = Get("j");
  EXPECT_FALSE(job.paused);
  EXPECT_EQ(job.spec.offset_minutes, 4);
}

TEST_F(PgJobStoreTest, PausedFlagSurvivesUpsertUnlessGiven) {
  Apply({Upsert("j", 5, 2, 1)});
  Apply({SetPaused("j", true, 2)});
  Apply({Upsert("j", 5, 2, 3)});
  EXPECT_TRUE(Get("j").paused);

  JobAction resume = Upsert("j", 5, 2, 4);
  resume.paused = false;
  Apply({resume});
  EXPECT_FALSE(Get("j").paused);

  JobAction born_paused = Upsert("k", 5, 2, 5);
  born_paused.paused = true;
  Apply({born_paused});
  EXPECT_TRUE(Get("k").paused);
}

TEST_F(PgJobStoreTest, SetPausedOnMissingRowIsANoOp) {
  Apply({SetPaused("ghost", true, 1)});
  EXPECT_FALSE(Exists("ghost"));
  EXPECT_EQ(*store_->CountJobs(), 0);
}

TEST_F(PgJobStoreTest, SetPausedRecordsTheSourcePosition) {
  Apply({Upsert("j", 5, 2, 1)});
  Apply({SetPaused("j", true, 7)});
  const StoredJob job = Get("j");
  EXPECT_TRUE(job.paused);
  EXPECT_EQ(job.source.offset, 7);
  Apply({SetPaused("j", false, 8)});
  EXPECT_FALSE(Get("j").paused);
}

TEST_F(PgJobStoreTest, DeleteRemovesTheRow) {
  Apply({Upsert("j", 5, 2, 1), Upsert("k", 5, 2, 2)});
  Apply({Delete("j", 3)});
  EXPECT_FALSE(Exists("j"));
  EXPECT_TRUE(Exists("k"));
  Apply({Delete("never-existed", 4)});
  EXPECT_EQ(*store_->CountJobs(), 1);
}

TEST_F(PgJobStoreTest, DeleteOlderThanTheStoredRowIsIgnored) {
  Apply({Upsert("j", 5, 2, 10)});
  Apply({Delete("j", 9)});
  EXPECT_TRUE(Exists("j"));
  Apply({Delete("j", 10)});  // same offset: not strictly newer than the delete
  EXPECT_FALSE(Exists("j"));
}

TEST_F(PgJobStoreTest, OlderActionFromTheSamePartitionIsIgnored) {
  JobAction current = Upsert("j", 5, 2, 10);
  current.spec.topic = "current.topic";
  Apply({current});
  const std::string before = Dump();

  JobAction older = Upsert("j", 15, 3, 9);
  older.spec.topic = "older.topic";
  JobAction same = Upsert("j", 30, 3, 10);
  Apply({older});
  Apply({same});
  Apply({SetPaused("j", true, 10)});
  EXPECT_EQ(Dump(), before);

  // Another partition's offsets say nothing about order: the action applies.
  JobAction other_partition = Upsert("j", 15, 3, 9, 1);
  Apply({other_partition});
  EXPECT_EQ(Get("j").spec.interval_minutes, 15);
}

TEST_F(PgJobStoreTest, ReplayLeavesTheTableByteForByteUnchanged) {
  JobAction fresh = Upsert("c", 60, 30, 6);
  fresh.replace_fresh = true;
  JobAction explicit_offset = Upsert("e", 10, 3, 7);
  explicit_offset.spec.offset_explicit = true;
  const std::vector<std::vector<JobAction>> batches = {
      {Upsert("a", 5, 1, 1), Upsert("b", 15, 2, 2), Upsert("c", 60, 3, 3), Upsert("d", 1, 0, 4)},
      {SetPaused("a", true, 5), fresh, explicit_offset, Delete("d", 8)},
      {Upsert("b", 5, 4, 9), Upsert("a", 5, 2, 10), SetPaused("c", true, 11)},
  };
  for (const auto& batch : batches) Apply(batch);
  const std::string once = Dump();
  ASSERT_FALSE(once.empty());

  db().Exec("SELECT pg_sleep(0.01)");
  for (const auto& batch : batches) Apply(batch);
  EXPECT_EQ(Dump(), once);
  Apply(batches[2]);  // a suffix
  EXPECT_EQ(Dump(), once);
}

TEST_F(PgJobStoreTest, ABatchIsAllOrNothing) {
  JobAction bad = Upsert("bad", 5, 9, 2);  // offset out of range: violates the check constraint
  const Status st = store_->ApplyActions({Upsert("good", 5, 1, 1), bad, Delete("x", 3)});
  EXPECT_EQ(st.code(), Status::Code::kInvalid) << st.ToString();
  EXPECT_EQ(*store_->CountJobs(), 0);
  // The store is usable afterwards.
  Apply({Upsert("good", 5, 1, 1)});
  EXPECT_TRUE(Exists("good"));
}

TEST_F(PgJobStoreTest, LargeBatchesAreApplied) {
  std::vector<JobAction> actions;
  const std::string details = "{\"blob\":\"" + std::string(60 * 1024, 'x') + "\"}";
  for (int i = 0; i < 300; ++i) {  // ~18 MiB of upserts, streamed through the staging table
    JobAction a = Upsert("big-" + std::to_string(i), 5, i % 5, i);
    a.spec.details_json = details;
    actions.push_back(std::move(a));
  }
  Apply(actions);
  EXPECT_EQ(*store_->CountJobs(), 300);
  EXPECT_EQ(Get("big-299").spec.details_json, details);
}

TEST_F(PgJobStoreTest, UpsertTextSurvivesTheCopyStagingVerbatim) {
  // Upserts are streamed with COPY (text format): every character COPY treats specially must
  // come back unchanged, and "\N" must stay a two-character string, not NULL.
  JobAction a = Upsert("copy-special", 5, 1, 1);
  a.spec.owner = "tab\there";
  a.spec.key = "\\N";
  a.spec.details_json = "{\"s\":\"back\\\\slash \\\\N \\n \\t \\r\",\"raw\":\"\x01\x7f é\"}";
  JobAction b = Upsert("copy\\id\r\n2", 5, 2, 2);
  b.spec.key = "line1\nline2\r\\.";
  b.spec.retry_backoff.multiplier = 1.1;
  b.spec.max_retries = 3;
  Apply({a, b});
  const StoredJob ja = Get("copy-special");
  EXPECT_EQ(ja.spec.owner, "tab\there");
  EXPECT_EQ(ja.spec.key, "\\N");
  EXPECT_EQ(ja.spec.details_json, a.spec.details_json);
  EXPECT_FALSE(ja.spec.start_at.has_value());
  const StoredJob jb = Get("copy\\id\r\n2");
  EXPECT_EQ(jb.spec.key, "line1\nline2\r\\.");
  EXPECT_EQ(jb.spec.retry_backoff.multiplier, 1.1);
  EXPECT_EQ(jb.spec.max_retries, 3);
}

TEST_F(PgJobStoreTest, UpsertsWorkAgainAfterTheConnectionIsDropped) {
  // The staging table and its statements belong to one session; a new session makes its own.
  Apply({Upsert("s1", 5, 1, 1)});
  DropStoreConnections();
  EXPECT_EQ(store_->ApplyActions({Upsert("s2", 5, 1, 2)}).code(), Status::Code::kRetryable);
  Apply({Upsert("s2", 5, 1, 2), Upsert("s1", 10, 3, 3)});  // an insert and an update
  EXPECT_TRUE(Exists("s2"));
  EXPECT_EQ(Get("s1").spec.interval_minutes, 10);
  EXPECT_EQ(Get("s1").spec.offset_minutes, 3);
  // Staged rows never outlive their transaction: the next batch does not re-apply them.
  Apply({Delete("s1", 4)});
  Apply({Upsert("s3", 5, 1, 5)});
  EXPECT_FALSE(Exists("s1"));
  EXPECT_EQ(*store_->CountJobs(), 2);
}

// Issue 33: a page of the most jobs (1000) never said that more followed: the caller asked for
// 1001 rows and the store clamped to 1000. The store reads limit + 1 rows itself.
TEST_F(PgJobStoreTest, AFullPageOfTheMostJobsSaysThatMoreFollow) {
  std::vector<JobAction> actions;
  for (int i = 0; i < 1500; ++i) {
    char id[16];
    std::snprintf(id, sizeof(id), "many-%04d", i);
    actions.push_back(Upsert(id, 5, 0, i));
  }
  Apply(actions);
  JobListFilter filter;
  filter.limit = kMaxJobPage;
  StatusOr<JobPage> first = store_->ListJobs(filter);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->jobs.size(), 1000u);
  EXPECT_EQ(first->next_after_id, "many-0999");
  filter.after_id = first->next_after_id;
  StatusOr<JobPage> second = store_->ListJobs(filter);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->jobs.size(), 500u);
  EXPECT_EQ(second->jobs.front().spec.id, "many-1000");
  EXPECT_TRUE(second->next_after_id.empty());
}

TEST_F(PgJobStoreTest, ListJobsPagesByIdWithFilters) {
  std::vector<JobAction> actions;
  for (int i = 0; i < 25; ++i) {
    char id[16];
    std::snprintf(id, sizeof(id), "job-%02d", i);
    JobAction a = Upsert(id, 5, 0, i);
    a.spec.owner = i % 2 == 0 ? "even" : "odd";
    a.spec.topic = i % 3 == 0 ? "t.three" : "t.other";
    actions.push_back(std::move(a));
  }
  Apply(actions);

  std::vector<std::string> seen;
  JobListFilter filter;
  filter.limit = 10;
  int pages = 0;
  for (;; ++pages) {
    StatusOr<JobPage> page = store_->ListJobs(filter);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const StoredJob& j : page->jobs) seen.push_back(j.spec.id);
    if (page->next_after_id.empty()) break;
    EXPECT_EQ(page->next_after_id, page->jobs.back().spec.id);
    filter.after_id = page->next_after_id;
  }
  EXPECT_EQ(pages, 2);  // 10 + 10 + 5: the last page says so itself
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));

  auto ids = [&](std::string owner, std::string topic, std::string after_id, int32_t limit) {
    JobListFilter f;
    f.owner = std::move(owner);
    f.topic = std::move(topic);
    f.after_id = std::move(after_id);
    f.limit = limit;
    std::vector<std::string> out;
    StatusOr<JobPage> r = store_->ListJobs(f);
    EXPECT_TRUE(r.ok());
    if (r.ok()) {
      for (const StoredJob& j : r->jobs) out.push_back(j.spec.id);
    }
    return out;
  };
  EXPECT_EQ(ids("even", "", "job-17", 100),
            (std::vector<std::string>{"job-18", "job-20", "job-22", "job-24"}));
  EXPECT_EQ(ids("", "t.three", "", 100),
            (std::vector<std::string>{"job-00", "job-03", "job-06", "job-09", "job-12", "job-15", "job-18",
                                      "job-21", "job-24"}));
  EXPECT_EQ(ids("odd", "t.three", "", 100),
            (std::vector<std::string>{"job-03", "job-09", "job-15", "job-21"}));
  EXPECT_EQ(ids("", "", "", 0).size(), 1u);        // clamped up to 1
  EXPECT_EQ(ids("", "", "", 100000).size(), 25u);  // clamped down to 1000
}

// Issue 37: the console's search by id prefix (GET /v1/jobs?id_prefix=), with every filter shape,
// across pages, and with ids that a byte-wise upper bound must not cut off ("team/a\x7f...",
// code points above the prefix's last one).
TEST_F(PgJobStoreTest, ListJobsByIdPrefixKeepsExactlyTheIdsThatStartWithIt) {
  const std::vector<std::string> all = {"team/a",   "team/a-1", "team/a-2",     "team/a\x7f", "team/a\xc3\xa9",
                                        "team/ab",  "team/b-1", "team/\xc3\xa9", "teal",        "team0",
                                        "team/a\xf4\x8f\xbf\xbf"};
  std::vector<JobAction> actions;
  for (size_t i = 0; i < all.size(); ++i) {
    JobAction a = Upsert(all[i], 5, 0, static_cast<int>(i));
    a.spec.owner = i % 2 == 0 ? "even" : "odd";
    a.spec.topic = "t.prefix";
    actions.push_back(std::move(a));
  }
  Apply(actions);
  auto ids = [&](const std::string& prefix, const std::string& owner, const std::string& topic, int32_t limit) {
    std::vector<std::string> out;
    JobListFilter f;
    f.id_prefix = prefix;
    f.owner = owner;
    f.topic = topic;
    f.limit = limit;
    for (int pages = 0; pages < 20; ++pages) {
      StatusOr<JobPage> r = store_->ListJobs(f);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      for (const StoredJob& j : r->jobs) out.push_back(j.spec.id);
      if (r->next_after_id.empty()) break;
      f.after_id = r->next_after_id;
    }
    return out;
  };
  auto expected = [&](const std::string& prefix, int parity) {  // parity -1: any owner
    std::vector<std::string> out;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].starts_with(prefix) && (parity < 0 || static_cast<int>(i % 2) == parity)) out.push_back(all[i]);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  for (const std::string prefix : {"team/a", "team/", "team", "te", "team/a\xf4\x8f\xbf\xbf", "team/\xc3"
                                   "\xa9", "nothing"}) {
    SCOPED_TRACE(prefix);
    EXPECT_EQ(ids(prefix, "", "", 2), expected(prefix, -1));   // pages of 2
    EXPECT_EQ(ids(prefix, "", "", 100), expected(prefix, -1));
    EXPECT_EQ(ids(prefix, "even", "", 100), expected(prefix, 0));
    EXPECT_EQ(ids(prefix, "", "t.prefix", 3), expected(prefix, -1));
    EXPECT_EQ(ids(prefix, "odd", "t.prefix", 100), expected(prefix, 1));
  }
  EXPECT_EQ(ids("team/a", "", "", 100).size(), 7u);
  EXPECT_EQ(ids("", "", "", 100).size(), all.size());
}

TEST_F(PgJobStoreTest, UnreachableDatabaseIsRetryable) {
  PgJobStore store("postgresql://belfry:belfry@127.0.0.1:1/belfry?connect_timeout=2");
  EXPECT_EQ(store.ApplyActions({Upsert("j", 5, 0, 1)}).code(), Status::Code::kRetryable);
  EXPECT_EQ(store.GetJob("j").status().code(), Status::Code::kRetryable);
  DueQuery q;
  q.terms = {PhaseTerm{5, {0}}};
  EXPECT_EQ(store.ForEachDueJob(q, [](const DueJob&) {}).code(), Status::Code::kRetryable);
}

TEST_F(PgJobStoreTest, ReconnectsAfterTheServerDropsTheConnection) {
  Apply({Upsert("j", 1, 0, 1)});
  DueQuery q;
  q.shard = ShardForId("j", kShardCount);
  q.terms = {PhaseTerm{1, {0}}};
  int rows = 0;
  ASSERT_TRUE(store_->ForEachDueJob(q, [&](const DueJob&) { ++rows; }).ok());
  ASSERT_TRUE(store_->GetJob("j").ok());

  DropStoreConnections();
  // The first call on each dead connection fails as retryable; the next one reconnects.
  EXPECT_EQ(store_->ForEachDueJob(q, [&](const DueJob&) { ++rows; }).code(), Status::Code::kRetryable);
  EXPECT_TRUE(store_->ForEachDueJob(q, [&](const DueJob&) { ++rows; }).ok());
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(store_->GetJob("j").status().code(), Status::Code::kRetryable);
  EXPECT_TRUE(store_->GetJob("j").ok());
}

// Issue 18: a pause's note is stored with the flag, replaced by a later pause (which keeps the
// time it was paused since), kept by an upsert that leaves the flag alone, cleared by a resume.
TEST_F(PgJobStoreTest, APausesNoteIsStoredWithTheFlag) {
  Apply({Upsert("j", 5, 1, 1)});
  EXPECT_FALSE(Get("j").paused_at.has_value());
  JobAction pause = SetPaused("j", true, 2);
  pause.pause_reason = "carrier outage";
  pause.pause_actor = "oncall-ana";
  Apply({pause});
  StoredJob j = Get("j");
  EXPECT_TRUE(j.paused);
  EXPECT_EQ(j.pause_reason, "carrier outage");
  EXPECT_EQ(j.pause_actor, "oncall-ana");
  ASSERT_TRUE(j.paused_at.has_value());
  const EpochMs since = *j.paused_at;

  JobAction again = SetPaused("j", true, 3);
  again.pause_reason = "still out";
  Apply({again});
  j = Get("j");
  EXPECT_EQ(j.pause_reason, "still out");
  EXPECT_EQ(j.pause_actor, "");
  EXPECT_EQ(j.paused_at, since);

  Apply({Upsert("j", 5, 1, 4)});  // leaves the flag alone: the note stays
  j = Get("j");
  EXPECT_TRUE(j.paused);
  EXPECT_EQ(j.pause_reason, "still out");

  JobAction paused_upsert = Upsert("k", 5, 1, 5);  // an upsert folded with a pause
  paused_upsert.paused = true;
  paused_upsert.pause_reason = "born paused";
  Apply({paused_upsert, SetPaused("j", false, 6)});
  EXPECT_EQ(Get("k").pause_reason, "born paused");
  EXPECT_TRUE(Get("k").paused_at.has_value());
  j = Get("j");
  EXPECT_FALSE(j.paused);
  EXPECT_EQ(j.pause_reason, "");
  EXPECT_FALSE(j.paused_at.has_value());
}

// Issue 18: an offset the producer chose is pinned, one taken from the command's timestamp is
// movable, and an update that keeps the stored offset keeps whether it was pinned.
TEST_F(PgJobStoreTest, OffsetPinnedFollowsWhereTheOffsetCameFrom) {
  JobAction pinned = Upsert("pinned", 5, 2, 1);
  pinned.spec.offset_explicit = true;
  pinned.spec.offset_pinned = true;
  JobAction movable = Upsert("movable", 5, 2, 2);
  Apply({pinned, movable, Upsert("other", 15, 4, 3)});
  const auto loads = [&] {
    StatusOr<std::vector<OffsetLoad>> l = store_->ReadOffsetLoads();
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    std::map<std::pair<int32_t, int32_t>, std::pair<int64_t, int64_t>> out;
    for (const OffsetLoad& x : l.ok() ? *l : std::vector<OffsetLoad>{})
      out[{x.interval_minutes, x.offset_minutes}] = {x.pinned, x.movable};
    return out;
  };
  using Loads = std::map<std::pair<int32_t, int32_t>, std::pair<int64_t, int64_t>>;
  EXPECT_EQ(loads(), (Loads{{{5, 2}, {1, 1}}, {{15, 4}, {0, 1}}}));
  EXPECT_EQ(*store_->MovableJobIds(5, 2, 10), std::vector<std::string>{"movable"});

  // An update without an offset keeps the stored one, and with it the pin (or its absence)...
  JobAction keep = Upsert("pinned", 5, 0, 4);  // offset 0 from a timestamp; stored 2 stays
  Apply({keep, Upsert("movable", 5, 0, 5)});
  EXPECT_EQ(Get("pinned").spec.offset_minutes, 2);
  EXPECT_EQ(loads(), (Loads{{{5, 2}, {1, 1}}, {{15, 4}, {0, 1}}}));
  // ... an explicit offset pins, a new interval takes the new offset's origin, a pause hides.
  JobAction pin = Upsert("movable", 5, 3, 6);
  pin.spec.offset_explicit = true;
  pin.spec.offset_pinned = true;
  Apply({pin, Upsert("pinned", 10, 7, 7), SetPaused("other", true, 8)});
  EXPECT_EQ(loads(), (Loads{{{5, 3}, {1, 0}}, {{10, 7}, {0, 1}}}));
  EXPECT_TRUE(store_->MovableJobIds(5, 3, 10)->empty());
  EXPECT_EQ(*store_->MovableJobIds(10, 7, 10), std::vector<std::string>{"pinned"});
}

// Issue 18: the groups a load projection reads. Jobs that fire alike share a group; a start or
// end outside the window reads as absent; a one-shot counts only in the window; paused jobs not.
TEST_F(PgJobStoreTest, ReadLoadGroupsCountsJobsThatFireAlike) {
  constexpr int64_t kFirst = 29'000'000;  // epoch minutes
  const auto at = [](int64_t minute) { return minute * 60'000; };
  std::vector<JobAction> actions;
  int64_t src = 0;
  // Ids whose shard is 0: the first few that hash there.
  std::vector<std::string> ids;
  for (int n = 0; ids.size() < 8; ++n) {
    const std::string id = "g" + std::to_string(n);
    if (ShardForId(id, kShardCount) == 0) ids.push_back(id);
  }
  for (int i = 0; i < 3; ++i) actions.push_back(Upsert(ids[static_cast<size_t>(i)], 5, 1, ++src));
  JobAction early_start = Upsert(ids[3], 5, 1, ++src);  // a start before the window: as none
  early_start.spec.start_at = at(kFirst - 100);
  actions.push_back(early_start);
  JobAction late_end = Upsert(ids[4], 5, 1, ++src);  // an end inside the window: its own group
  late_end.spec.end_at = at(kFirst + 30) + 250;
  actions.push_back(late_end);
  actions.push_back(Upsert(ids[5], 5, 1, ++src));
  Apply(actions);
  Apply({SetPaused(ids[5], true, ++src)});  // one action per id and batch

  StatusOr<LoadGroups> read = store_->ReadLoadGroups(LoadGroupQuery{kFirst, kFirst + 59, "owner"});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  int64_t plain = 0, with_end = 0, total = 0;
  for (const LoadGroup& g : read->groups) {
    total += g.jobs;
    EXPECT_EQ(g.kind, LoadGroup::Kind::kInterval);
    EXPECT_EQ(g.shard, 0);
    EXPECT_EQ(g.label, "owner-a");
    EXPECT_FALSE(g.start_at.has_value());
    if (g.end_at) {
      EXPECT_EQ(*g.end_at, at(kFirst + 30) + 250);
      with_end += g.jobs;
    } else {
      plain += g.jobs;
    }
  }
  EXPECT_EQ(plain, 4);  // three plain, and the one whose start is before the window
  EXPECT_EQ(with_end, 1);
  EXPECT_EQ(total, 5);  // not the paused one
  EXPECT_EQ(store_->ReadLoadGroups(LoadGroupQuery{kFirst, kFirst, "shard"}).status().code(), Status::Code::kInvalid);
  // A cap below the groups there are: refused, not read.
  EXPECT_EQ(store_->ReadLoadGroups(LoadGroupQuery{kFirst, kFirst + 59, "owner", 1}).status().reason(), "too_many_groups");
  EXPECT_TRUE(store_->ReadLoadGroups(LoadGroupQuery{kFirst, kFirst + 59, "owner", 2}).ok());
  // As the admin sessions read it, with generic plans forced (serve_rules.cc): the same groups,
  // with and without a breakdown. Citus cannot plan these reads generically.
  StatusOr<std::string> generic = WithSessionSetting(db().url(), "plan_cache_mode", "force_generic_plan");
  ASSERT_TRUE(generic.ok());
  PgJobStore admin_store(*generic);
  for (const char* by : {"owner", "", "label:team"}) {
    StatusOr<LoadGroups> again = admin_store.ReadLoadGroups(LoadGroupQuery{kFirst, kFirst + 59, by});
    ASSERT_TRUE(again.ok()) << by << ": " << again.status().ToString();
    int64_t jobs = 0;
    for (const LoadGroup& g : again->groups) jobs += g.jobs;
    EXPECT_EQ(jobs, 5) << by;
  }
}

// Issue 37: the console's load by a label's value (GET /v1/load?by=label:<key>): each group is
// labelled with the job's value of that label, "" for a job without it.
TEST_F(PgJobStoreTest, ReadLoadGroupsBreaksDownByALabelsValue) {
  constexpr int64_t kFirst = 29'000'000;
  std::vector<JobAction> actions;
  const std::vector<std::pair<std::string, std::string>> jobs = {
      {"lab-1", R"({"carrier":"acme","team":"x"})"}, {"lab-2", R"({"carrier":"acme"})"},
      {"lab-3", R"({"carrier":"zeta"})"},             {"lab-4", "{}"}};
  int64_t src = 0;
  for (const auto& [id, labels] : jobs) {
    JobAction a = Upsert(id, 5, 1, ++src);
    a.spec.labels_json = labels == "{}" ? "" : labels;
    actions.push_back(std::move(a));
  }
  Apply(actions);
  StatusOr<LoadGroups> read = store_->ReadLoadGroups(LoadGroupQuery{kFirst, kFirst + 59, "label:carrier"});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  std::map<std::string, int64_t> by_value;
  for (const LoadGroup& g : read->groups) by_value[g.label] += g.jobs;
  EXPECT_EQ(by_value, (std::map<std::string, int64_t>{{"", 1}, {"acme", 2}, {"zeta", 1}}));
  EXPECT_EQ(store_->ReadLoadGroups(LoadGroupQuery{kFirst, kFirst, "label:"}).status().reason(), "invalid_by");
  EXPECT_EQ(store_->ReadLoadGroups(LoadGroupQuery{kFirst, kFirst, "label:-x"}).status().reason(), "invalid_by");
}

}  // namespace
}  // namespace belfry
