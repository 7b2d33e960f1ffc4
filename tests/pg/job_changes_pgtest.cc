// The audit trail in the PostgreSQL store (migration 0015, docs/audit-trail.md): one change per
// job a command, a manual fire or a bulk step changed, nothing for a replay or a no-op, a job's
// history newest first, one publisher at a time, and the retention sweep.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "labelled_job_action.h"
#include "migrated_database_test.h"
#include "pg/pg_job_store.h"

namespace belfry {
namespace {

EpochMs WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class PgJobChangesTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
  }

  static JobAction Upsert(const std::string& id, int64_t offset, int32_t interval = 5) {
    JobAction a = LabelledJobAction(id, "fleet", R"({"env":"staging"})", offset, kMigratedShardCount);
    a.spec.interval_minutes = interval;
    a.actor = "deploy-bot";
    a.reason = "release 42";
    return a;
  }
  static JobAction Named(JobAction::Kind kind, const std::string& id, int64_t offset, bool paused = false) {
    JobAction a;
    a.kind = kind;
    a.id = id;
    a.paused = paused;
    a.actor = "oncall-ana";
    a.reason = "carrier outage";
    a.source = SourcePosition{0, offset, WallNowMs()};
    return a;
  }

  std::vector<JobChange> History(const std::string& id, int64_t before = 0, int32_t limit = 100) {
    StatusOr<std::vector<JobChange>> h = store_->ListJobChanges(id, before, limit);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    return h.ok() ? h.value() : std::vector<JobChange>{};
  }
  int64_t CountChanges() { return db().Exec("SELECT count(*) FROM job_changes")[0][0].as<int64_t>(); }

  std::unique_ptr<PgJobStore> store_;
};

TEST_F(PgJobChangesTest, EachAppliedChangeIsRecordedOnceWithItsBeforeAndAfter) {
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1)}).ok());
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1)}).ok()) << "a replay";
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 2)}).ok()) << "the same spec again: only updatedAt moves";
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 3, 10)}).ok());
  ASSERT_TRUE(store_->ApplyActions({Named(JobAction::Kind::kSetPaused, "a", 4, true)}).ok());
  ASSERT_TRUE(store_->ApplyActions({Named(JobAction::Kind::kSetPaused, "a", 5, true)}).ok()) << "paused already";
  ASSERT_TRUE(store_->ApplyActions({Named(JobAction::Kind::kDelete, "a", 6)}).ok());
  ASSERT_TRUE(store_->ApplyActions({Named(JobAction::Kind::kDelete, "a", 7)}).ok()) << "no such job";

  const std::vector<JobChange> h = History("a");
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].op, "delete");
  EXPECT_EQ(h[1].op, "pause");
  EXPECT_EQ(h[2].op, "upsert");
  EXPECT_EQ(h[3].op, "upsert");
  EXPECT_GT(h[0].change_id, h[1].change_id) << "newest first";

  EXPECT_TRUE(h[3].before_json.empty()) << "created";
  EXPECT_EQ(nlohmann::json::parse(h[3].after_json)["intervalMinutes"], 5);
  EXPECT_EQ(h[3].actor, "deploy-bot");
  EXPECT_EQ(h[3].reason, "release 42");
  EXPECT_EQ(h[3].source.offset, 1);
  EXPECT_GT(h[3].changed_at, 0);
  EXPECT_EQ(nlohmann::json::parse(h[2].before_json)["intervalMinutes"], 5);
  EXPECT_EQ(nlohmann::json::parse(h[2].after_json)["intervalMinutes"], 10);
  EXPECT_EQ(h[2].source.offset, 3);
  EXPECT_FALSE(nlohmann::json::parse(h[1].before_json)["paused"].get<bool>());
  const nlohmann::json paused = nlohmann::json::parse(h[1].after_json);
  EXPECT_TRUE(paused["paused"].get<bool>());
  EXPECT_EQ(h[1].actor, "oncall-ana");
  EXPECT_EQ(h[1].reason, "carrier outage");
  EXPECT_TRUE(nlohmann::json::parse(h[0].before_json)["paused"].get<bool>());
  EXPECT_TRUE(h[0].after_json.empty()) << "deleted";
  EXPECT_EQ(h[0].source.offset, 6);
  EXPECT_TRUE(h[0].bulk_id.empty());

  // Keyset pages, newest first.
  const std::vector<JobChange> page = History("a", h[1].change_id, 1);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].change_id, h[2].change_id);
  EXPECT_TRUE(History("b").empty());
}

TEST_F(PgJobChangesTest, AChangeStoresWhatChangedAndIsReadAndPublishedWhole) {
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1)}).ok());
  ASSERT_TRUE(store_->ApplyActions({Named(JobAction::Kind::kSetPaused, "a", 2, true)}).ok());
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 3, 10)}).ok());  // a new interval; the pause stays
  ASSERT_TRUE(store_->ApplyActions({Upsert("b", 4)}).ok());
  // Stored: a create is the whole job, a change only its id, what differs and updatedAt.
  const pqxx::result stored =
      db().Exec("SELECT op, coalesce(length(before), 0) + coalesce(length(after), 0), after FROM job_changes"
                " WHERE job_id = 'a' ORDER BY change_id");
  ASSERT_EQ(stored.size(), 3u);
  const int64_t create_bytes = stored[0][1].as<int64_t>();
  EXPECT_GT(create_bytes, 300) << stored[0][2].as<std::string>();
  EXPECT_LT(stored[1][1].as<int64_t>(), 300) << "a pause: " << stored[1][2].as<std::string>();
  EXPECT_LT(stored[2][1].as<int64_t>(), create_bytes) << stored[2][2].as<std::string>();
  EXPECT_EQ(stored[2][2].as<std::string>().find("\"topic\""), std::string::npos) << "the topic did not change";

  // Read: whole views, each before the state the previous change left (keyset pages too).
  auto whole = [](const std::string& json) { return nlohmann::json::parse(json); };
  const std::vector<JobChange> h = History("a");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(whole(h[0].after_json)["intervalMinutes"], 10);
  EXPECT_EQ(whole(h[0].after_json)["topic"], whole(h[2].after_json)["topic"]);
  EXPECT_TRUE(whole(h[0].before_json)["paused"].get<bool>());
  EXPECT_TRUE(whole(h[0].after_json)["paused"].get<bool>()) << "a field the change did not touch";
  EXPECT_EQ(whole(h[0].before_json)["intervalMinutes"], 5);
  EXPECT_EQ(whole(h[1].after_json), whole(h[0].before_json));
  EXPECT_EQ(whole(h[1].before_json), whole(h[2].after_json));
  EXPECT_EQ(whole(h[1].before_json).size(), whole(h[2].after_json).size());
  const std::vector<JobChange> page = History("a", h[0].change_id, 1);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(whole(page[0].before_json), whole(h[1].before_json)) << "a later page walks back the same way";
  EXPECT_EQ(whole(page[0].after_json), whole(h[1].after_json));

  // Published: the same whole views, in a batch that ends before a job's later changes.
  std::vector<JobChange> events;
  StatusOr<int64_t> n = store_->PublishChanges(2, [&](const std::vector<JobChange>& changes) {
    events = changes;
    return Status::Ok();
  });
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(whole(events[1].before_json), whole(h[1].before_json));
  EXPECT_EQ(whole(events[1].after_json), whole(h[1].after_json));
  n = store_->PublishChanges(10, [&](const std::vector<JobChange>& changes) {
    events = changes;
    return Status::Ok();
  });
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(whole(events[0].after_json), whole(h[0].after_json));
  EXPECT_EQ(events[1].job_id, "b");
}

TEST_F(PgJobChangesTest, ABatchRecordsOneChangePerJob) {
  JobAction paused_upsert = Upsert("b", 9);
  paused_upsert.paused = true;  // an upsert and a pause folded into one action
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 8), paused_upsert, Named(JobAction::Kind::kDelete, "c", 10)}).ok());
  EXPECT_EQ(CountChanges(), 2);
  const std::vector<JobChange> b = History("b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].op, "upsert");
  EXPECT_TRUE(nlohmann::json::parse(b[0].after_json)["paused"].get<bool>());
}

TEST_F(PgJobChangesTest, ManualFiresRecordWhatTheyStored) {
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1)}).ok());
  ManualFire trigger;
  trigger.id = "a";
  trigger.actor = "oncall-ana";
  trigger.source = SourcePosition{0, 2, WallNowMs()};
  ASSERT_TRUE(store_->ApplyManualFires({trigger}).ok());
  ASSERT_TRUE(store_->ApplyManualFires({trigger}).ok()) << "a replay stores nothing";
  ManualFire missing = trigger;
  missing.id = "nope";
  ASSERT_TRUE(store_->ApplyManualFires({missing}).ok());
  ManualFire backfill = trigger;
  backfill.kind = ManualFire::Kind::kBackfill;
  backfill.source.offset = 3;
  backfill.backfill.to_ms = (WallNowMs() / 60'000) * 60'000 - 60'000;
  backfill.backfill.from_ms = backfill.backfill.to_ms - 20 * 60'000;
  ASSERT_TRUE(store_->ApplyManualFires({backfill}).ok());
  ManualFire dry = backfill;
  dry.source.offset = 4;
  dry.backfill.dry_run = true;
  ASSERT_TRUE(store_->ApplyManualFires({dry}).ok());

  const std::vector<JobChange> h = History("a");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].op, "backfill");
  const nlohmann::json detail = nlohmann::json::parse(h[0].detail_json);
  EXPECT_EQ(detail["slots"], 4) << h[0].detail_json;
  EXPECT_EQ(detail["covered"], 0);
  EXPECT_EQ(h[1].op, "trigger");
  EXPECT_EQ(nlohmann::json::parse(h[1].detail_json)["slots"], 1);
  EXPECT_EQ(h[1].actor, "oncall-ana");
  EXPECT_EQ(h[1].before_json, h[1].after_json) << "a trigger leaves the job as it was";
  EXPECT_FALSE(h[1].after_json.empty());
}

TEST_F(PgJobChangesTest, ABulkStepRecordsTheJobsItChanged) {
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1), Upsert("b", 2), Upsert("c", 3)}).ok());
  ASSERT_TRUE(store_->ApplyActions({Named(JobAction::Kind::kSetPaused, "c", 4, true)}).ok());
  BulkOp op;
  op.id = "freeze";
  op.op = CommandOp::kPause;
  op.selector.owner = "fleet";
  op.actor = "ops";
  op.reason = "maintenance";
  op.source = SourcePosition{2, 77, WallNowMs()};
  BulkOp dry = op;
  dry.id = "count";
  dry.dry_run = true;
  dry.source.offset = 78;
  ASSERT_TRUE(store_->AcceptBulkOps({op, dry}).ok());
  for (int i = 0; i < 100; ++i) {
    StatusOr<std::optional<BulkOpState>> s = store_->RunBulkStep(2, WallNowMs());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    if (!s->has_value()) break;
  }
  EXPECT_EQ(CountChanges(), 3 + 1 + 2) << "three creates, c's own pause, and the bulk pause of a and b";
  for (const char* id : {"a", "b"}) {
    const std::vector<JobChange> h = History(id);
    ASSERT_EQ(h.size(), 2u) << id;
    EXPECT_EQ(h[0].op, "pause");
    EXPECT_EQ(h[0].bulk_id, "freeze");
    EXPECT_EQ(h[0].actor, "ops");
    EXPECT_EQ(h[0].source.partition, 2);
    EXPECT_EQ(h[0].source.offset, 77);
  }
}

TEST_F(PgJobChangesTest, OnePublisherAtATimeMarksWhatItPublished) {
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1), Upsert("b", 2), Upsert("c", 3)}).ok());
  PgJobStore other(db().url());
  std::vector<int64_t> seen;
  // A failed publish marks nothing.
  StatusOr<int64_t> n = store_->PublishChanges(2, [&](const std::vector<JobChange>& changes) {
    for (const JobChange& c : changes) seen.push_back(c.change_id);
    return Status::Retryable("broker down");
  });
  EXPECT_FALSE(n.ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_LT(seen[0], seen[1]) << "in change_id order";
  // While one publishes, another node's call publishes nothing.
  std::vector<int64_t> published;
  int64_t other_marked = -1;
  n = store_->PublishChanges(2, [&](const std::vector<JobChange>& changes) {
    StatusOr<int64_t> o = other.PublishChanges(10, [](const std::vector<JobChange>&) {
      ADD_FAILURE() << "two publishers at once";
      return Status::Ok();
    });
    other_marked = o.ok() ? o.value() : -2;
    for (const JobChange& c : changes) published.push_back(c.change_id);
    return Status::Ok();
  });
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n.value(), 2);
  EXPECT_EQ(other_marked, 0);
  EXPECT_EQ(published, seen) << "the failed round's changes come again, first";
  n = other.PublishChanges(10, [&](const std::vector<JobChange>& changes) {
    EXPECT_EQ(changes.size(), 1u);
    EXPECT_GT(changes[0].change_id, published.back());
    return Status::Ok();
  });
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1);
  n = store_->PublishChanges(10, [](const std::vector<JobChange>&) {
    ADD_FAILURE() << "nothing is left to publish";
    return Status::Ok();
  });
  EXPECT_EQ(n.value(), 0);
}

// Issue 33 §5: while the publisher waits for the broker's acknowledgements, its connection has
// no transaction open (no "idle in transaction" session holding a snapshot and locks), and the
// one-publisher rule still holds.
TEST_F(PgJobChangesTest, NoTransactionIsOpenWhileThePublisherWaitsForTheBroker) {
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1)}).ok());
  PgJobStore other(db().url());
  std::string states;
  int64_t other_marked = -1;
  StatusOr<int64_t> n = store_->PublishChanges(10, [&](const std::vector<JobChange>&) {
    // The broker's wait, as seen from another session.
    for (const pqxx::row& r : db().Exec("SELECT state FROM pg_stat_activity WHERE datname = current_database() "
                                        "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
                                        "ORDER BY state")) {
      states += r[0].is_null() ? std::string("null") : r[0].as<std::string>();
      states += ';';
    }
    StatusOr<int64_t> o = other.PublishChanges(10, [](const std::vector<JobChange>&) {
      ADD_FAILURE() << "two publishers at once";
      return Status::Ok();
    });
    other_marked = o.ok() ? o.value() : -2;
    return Status::Ok();
  });
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n.value(), 1);
  EXPECT_EQ(other_marked, 0);
  EXPECT_EQ(states.find("idle in transaction"), std::string::npos) << states;
  EXPECT_NE(states.find("idle;"), std::string::npos) << states;
  // The lock is released after the round: the other store publishes the next change.
  ASSERT_TRUE(store_->ApplyActions({Upsert("b", 2)}).ok());
  n = other.PublishChanges(10, [](const std::vector<JobChange>&) { return Status::Ok(); });
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1);
}

TEST_F(PgJobChangesTest, TheSweepDeletesOnlyOldPublishedChanges) {
  ASSERT_TRUE(store_->ApplyActions({Upsert("a", 1), Upsert("b", 2)}).ok());
  ASSERT_TRUE(store_->PublishChanges(1, [](const std::vector<JobChange>&) { return Status::Ok(); }).ok());
  StatusOr<int64_t> swept = store_->SweepJobChanges(WallNowMs() - 60'000, 100);
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(swept.value(), 0) << "not old enough";
  swept = store_->SweepJobChanges(WallNowMs() + 60'000, 100);
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(swept.value(), 1) << "the unpublished change stays";
  EXPECT_EQ(CountChanges(), 1);
}

}  // namespace
}  // namespace belfry
