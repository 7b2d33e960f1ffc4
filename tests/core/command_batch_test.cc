#include "core/command_batch.h"

#include <gtest/gtest.h>

#include "core/shard_hash.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

Command Upsert(const std::string& id, int interval, int offset, bool explicit_offset, int64_t off) {
  Command c;
  c.op = CommandOp::kUpsert;
  c.id = id;
  c.spec.id = id;
  c.spec.interval_minutes = interval;
  c.spec.offset_minutes = offset;
  c.spec.offset_explicit = explicit_offset;
  c.spec.offset_pinned = explicit_offset;  // as the parser sets both
  c.spec.topic = "t";
  c.source = SourcePosition{0, off, 0};
  return c;
}

Command Op(CommandOp op, const std::string& id, int64_t off) {
  Command c;
  c.op = op;
  c.id = id;
  c.source = SourcePosition{0, off, 0};
  return c;
}

TEST(ReduceCommandsTest, OneActionPerIdInFirstSeenOrder) {
  auto actions = ReduceCommands({Upsert("a", 5, 1, false, 1), Upsert("b", 5, 2, false, 2), Upsert("a", 5, 3, false, 3)});
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].id, "a");
  EXPECT_EQ(actions[1].id, "b");
  EXPECT_EQ(actions[0].source.offset, 3);
}

TEST(ReduceCommandsTest, SecondUpsertKeepingIntervalInheritsOffset) {
  auto a = ReduceCommands({Upsert("a", 5, 1, true, 1), Upsert("a", 5, 3, false, 2)});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].spec.offset_minutes, 1);
  EXPECT_TRUE(a[0].spec.offset_explicit);
  // ... unless the second one is explicit.
  a = ReduceCommands({Upsert("a", 5, 1, false, 1), Upsert("a", 5, 3, true, 2)});
  EXPECT_EQ(a[0].spec.offset_minutes, 3);
  // Both derived: the stored row (if any) still decides, so stay non-explicit with the first's offset.
  a = ReduceCommands({Upsert("a", 5, 1, false, 1), Upsert("a", 5, 3, false, 2)});
  EXPECT_EQ(a[0].spec.offset_minutes, 1);
  EXPECT_FALSE(a[0].spec.offset_explicit);
}

TEST(ReduceCommandsTest, IntervalChangeWithinBatchTakesNewOffset) {
  auto a = ReduceCommands({Upsert("a", 5, 1, false, 1), Upsert("a", 10, 7, false, 2)});
  EXPECT_EQ(a[0].spec.interval_minutes, 10);
  EXPECT_EQ(a[0].spec.offset_minutes, 7);
  EXPECT_TRUE(a[0].spec.offset_explicit);  // must not fall back to a stored row's offset
}

// Issue 18: offset_explicit steers the batch's offset; offset_pinned says only whether a
// producer chose it (the rebalance may move the others), and survives the reduction.
TEST(ReduceCommandsTest, OffsetPinnedSaysWhetherTheProducerChoseTheOffset) {
  auto a = ReduceCommands({Upsert("a", 5, 1, false, 1), Upsert("a", 10, 7, false, 2)});
  EXPECT_TRUE(a[0].spec.offset_explicit);
  EXPECT_FALSE(a[0].spec.offset_pinned);  // the timestamp chose it
  a = ReduceCommands({Op(CommandOp::kDelete, "a", 1), Upsert("a", 5, 3, false, 2)});
  EXPECT_TRUE(a[0].spec.offset_explicit);
  EXPECT_FALSE(a[0].spec.offset_pinned);
  a = ReduceCommands({Upsert("a", 5, 1, true, 1), Upsert("a", 5, 3, false, 2)});
  EXPECT_EQ(a[0].spec.offset_minutes, 1);
  EXPECT_TRUE(a[0].spec.offset_pinned);  // inherits the chosen offset and its pin
}

Command Pause(const std::string& id, const std::string& reason, int64_t off) {
  Command c = Op(CommandOp::kPause, id, off);
  c.reason = reason;
  c.actor = "actor-" + reason;
  return c;
}

// Issue 18: a pause's note travels with the flag through the batch.
TEST(ReduceCommandsTest, APausesNoteFollowsTheFlag) {
  auto a = ReduceCommands({Pause("a", "first", 1), Pause("a", "second", 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kSetPaused);
  EXPECT_EQ(a[0].pause_reason, "second");
  EXPECT_EQ(a[0].pause_actor, "actor-second");
  a = ReduceCommands({Pause("a", "why", 1), Op(CommandOp::kResume, "a", 2)});
  EXPECT_EQ(a[0].paused, false);
  EXPECT_EQ(a[0].pause_reason, "");
  a = ReduceCommands({Upsert("a", 5, 1, true, 1), Pause("a", "why", 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kUpsert);
  EXPECT_EQ(a[0].paused, true);
  EXPECT_EQ(a[0].pause_reason, "why");
  a = ReduceCommands({Pause("a", "why", 1), Upsert("a", 5, 1, true, 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kUpsert);
  EXPECT_EQ(a[0].paused, true);
  EXPECT_EQ(a[0].pause_actor, "actor-why");
  EXPECT_EQ(a[0].actor, "") << "the audit's actor is the last folded command's: the upsert named none";
  a = ReduceCommands({Upsert("a", 5, 1, true, 1), Pause("a", "why", 2)});
  EXPECT_EQ(a[0].actor, "actor-why") << "the audit's actor is the last folded command's";
  EXPECT_EQ(a[0].reason, "why");
  a = ReduceCommands({Op(CommandOp::kDelete, "a", 1), Pause("a", "why", 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kDelete);
}

TEST(ReduceCommandsTest, DeleteThenUpsertIsFresh) {
  auto a = ReduceCommands({Op(CommandOp::kDelete, "a", 1), Upsert("a", 5, 3, false, 2)});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, JobAction::Kind::kUpsert);
  EXPECT_TRUE(a[0].replace_fresh);
  EXPECT_EQ(a[0].paused, std::optional<bool>(false));
  EXPECT_EQ(a[0].spec.offset_minutes, 3);
}

TEST(ReduceCommandsTest, UpsertThenDeleteIsDelete) {
  auto a = ReduceCommands({Upsert("a", 5, 3, false, 1), Op(CommandOp::kDelete, "a", 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kDelete);
  EXPECT_EQ(a[0].source.offset, 2);
}

TEST(ReduceCommandsTest, PauseAndResumeFoldIntoUpsert) {
  auto a = ReduceCommands({Upsert("a", 5, 3, false, 1), Op(CommandOp::kPause, "a", 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kUpsert);
  EXPECT_EQ(a[0].paused, std::optional<bool>(true));
  EXPECT_EQ(a[0].source.offset, 2);
  a = ReduceCommands({Op(CommandOp::kPause, "a", 1), Upsert("a", 5, 3, false, 2)});
  EXPECT_EQ(a[0].paused, std::optional<bool>(true));  // upsert keeps the paused flag
  a = ReduceCommands({Op(CommandOp::kPause, "a", 1), Op(CommandOp::kResume, "a", 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kSetPaused);
  EXPECT_EQ(a[0].paused, std::optional<bool>(false));
}

TEST(ReduceCommandsTest, PauseAfterDeleteStaysDeleted) {
  auto a = ReduceCommands({Op(CommandOp::kDelete, "a", 1), Op(CommandOp::kPause, "a", 2)});
  EXPECT_EQ(a[0].kind, JobAction::Kind::kDelete);
  EXPECT_EQ(a[0].source.offset, 2);
}

TEST(ReduceCommandsTest, LoneUpsertKeepsStoredPausedFlag) {
  auto a = ReduceCommands({Upsert("a", 5, 3, false, 1)});
  EXPECT_FALSE(a[0].paused.has_value());
  EXPECT_FALSE(a[0].replace_fresh);
}

TEST(EncodeCommandOutcomeTest, Format) {
  CommandOutcome o{"job-1", "upsert", true, "", 3, 42};
  EXPECT_EQ(EncodeCommandOutcome(o),
            R"({"id":"job-1","op":"upsert","status":"applied","error":null,"partition":3,"offset":42})");
  o.applied = false;
  o.error = "invalid_json: \"bad\"";
  EXPECT_EQ(EncodeCommandOutcome(o),
            R"({"id":"job-1","op":"upsert","status":"rejected","error":"invalid_json: \"bad\"","partition":3,"offset":42})");
}

class PrepareCommandBatchTest : public ::testing::Test {
 protected:
  PrepareCommandBatchTest() : policy_({"*"}, {"belfry.commands"}) {
    rules_.intervals = {1, 2, 5, 60};
    rules_.topic_policy = &policy_;
    rules_.time_zones = &SystemTimeZones();
  }
  RawCommand Raw(std::optional<std::string> key, std::optional<std::string> value, int64_t off) {
    return RawCommand{std::move(key), std::move(value), SourcePosition{2, off, 1795354620000LL}};
  }
  TopicPolicy policy_;
  CommandRules rules_;
};

TEST_F(PrepareCommandBatchTest, ValidAndRejectedSideBySide) {
  std::vector<RawCommand> batch = {
      Raw("j1", R"({"id":"j1","intervalMinutes":5,"topic":"out"})", 10),
      Raw("j2", "{not json", 11),
      Raw("j3", std::nullopt, 12),  // tombstone
      Raw("j4", R"({"id":"j4","intervalMinutes":5,"topic":"belfry.commands"})", 13),
      Raw("j1", R"({"op":"pause","id":"j1"})", 14),
  };
  PreparedCommandBatch p = PrepareCommandBatch(batch, rules_);
  ASSERT_EQ(p.outcomes.size(), 5u);
  EXPECT_TRUE(p.outcomes[0].applied);
  EXPECT_FALSE(p.outcomes[1].applied);
  EXPECT_EQ(p.outcomes[1].id, "j2");
  EXPECT_EQ(p.outcomes[1].partition, 2);
  EXPECT_EQ(p.outcomes[1].offset, 11);
  EXPECT_TRUE(p.outcomes[2].applied);
  EXPECT_EQ(p.outcomes[2].op, "delete");
  EXPECT_FALSE(p.outcomes[3].applied);
  ASSERT_EQ(p.rejections.size(), 2u);
  EXPECT_EQ(p.rejections[0].index, 1u);
  EXPECT_EQ(p.rejections[0].status.reason(), "invalid_json");
  EXPECT_EQ(p.rejections[1].index, 3u);
  EXPECT_EQ(p.rejections[1].status.reason(), "forbidden_topic");
  ASSERT_EQ(p.actions.size(), 2u);
  EXPECT_EQ(p.actions[0].id, "j1");
  EXPECT_EQ(p.actions[0].kind, JobAction::Kind::kUpsert);
  EXPECT_EQ(p.actions[0].paused, std::optional<bool>(true));
  EXPECT_EQ(p.actions[0].spec.shard, ShardForId("j1", 120));
  EXPECT_EQ(p.actions[1].kind, JobAction::Kind::kDelete);
}

// Issue 18: trigger and backfill are not job actions; they go to `manual`, in order, with the
// index of their outcome, and their counts reach the outcome once the store has applied them.
TEST_F(PrepareCommandBatchTest, TriggersAndBackfillsAreAppliedAfterTheJobActions) {
  std::vector<RawCommand> batch = {
      Raw("j1", R"({"id":"j1","intervalMinutes":5,"topic":"out"})", 10),
      Raw("j1", R"({"op":"trigger","id":"j1"})", 11),
      Raw("j2", R"({"op":"backfill","id":"j2","from":"2026-11-22T00:00:00Z","to":"2026-11-22T01:00:00Z","dryRun":true})", 12),
      Raw("j3", R"({"op":"backfill","id":"j3","from":"2026-11-22T00:00:00Z","to":"2026-11-22T01:00:00Z"})", 13),
      Raw("j1", R"({"op":"delete","id":"j1"})", 14),
  };
  PreparedCommandBatch p = PrepareCommandBatch(batch, rules_);
  ASSERT_EQ(p.actions.size(), 1u);
  EXPECT_EQ(p.actions[0].kind, JobAction::Kind::kDelete) << "the trigger does not fold into j1's action";
  ASSERT_EQ(p.manual.size(), 3u);
  EXPECT_EQ(p.manual_outcomes, (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(p.manual[0].kind, ManualFire::Kind::kTrigger);
  EXPECT_EQ(p.manual[0].source.offset, 11);
  EXPECT_EQ(p.manual[0].max_late_ms, rules_.one_shot.max_catchup_ms);
  EXPECT_EQ(p.manual[1].kind, ManualFire::Kind::kBackfill);
  EXPECT_TRUE(p.manual[1].backfill.dry_run);
  EXPECT_EQ(p.manual[2].id, "j3");

  RecordManualFireResults({ManualFireResult{Status::Ok(), 0, 0}, ManualFireResult{Status::Ok(), 60, 0},
                           ManualFireResult{Status::NotFound("job j3 does not exist"), 0, 0}},
                          &p);
  EXPECT_EQ(EncodeCommandOutcome(p.outcomes[1]),
            R"({"id":"j1","op":"trigger","status":"applied","error":null,"slots":0,"partition":2,"offset":11})");
  EXPECT_EQ(EncodeCommandOutcome(p.outcomes[2]),
            R"({"id":"j2","op":"backfill","status":"applied","error":null,"slots":60,"covered":0,"dryRun":true,)"
            R"("partition":2,"offset":12})");
  EXPECT_EQ(EncodeCommandOutcome(p.outcomes[3]),
            R"({"id":"j3","op":"backfill","status":"rejected","error":"not_found: job j3 does not exist",)"
            R"("partition":2,"offset":13})");
  EXPECT_TRUE(p.rejections.empty()) << "a rejection at apply time is not a DLQ case";
}

// Issue 33: the commands an action was reduced from, and their outcomes once the store refuses it.
TEST_F(PrepareCommandBatchTest, AStoreRefusalRejectsEveryCommandOfTheActionWithStoreError) {
  std::vector<RawCommand> batch = {
      Raw("j1", R"({"id":"j1","intervalMinutes":5,"topic":"out"})", 10),
      Raw("j2", R"({"id":"j2","intervalMinutes":5,"topic":"out"})", 11),
      Raw("j1", R"({"op":"trigger","id":"j1"})", 12),
      Raw("j1", "{not json", 13),
      Raw("j1", R"({"op":"pause","id":"j1"})", 14),
  };
  PreparedCommandBatch p = PrepareCommandBatch(batch, rules_);
  ASSERT_EQ(p.actions.size(), 2u);
  EXPECT_EQ(ActionCommandIndices(p, 0), (std::vector<size_t>{0, 4}))
      << "not the trigger, nor the command the parser rejected";
  EXPECT_EQ(ActionCommandIndices(p, 1), (std::vector<size_t>{1}));

  RefuseInStore(ActionCommandIndices(p, 0), Status::Invalid("sql", "apply actions: ERROR: refusing j1"), &p);
  EXPECT_EQ(EncodeCommandOutcome(p.outcomes[0]),
            R"({"id":"j1","op":"upsert","status":"rejected","error":"store_error: apply actions: ERROR: refusing j1",)"
            R"("partition":2,"offset":10})");
  EXPECT_FALSE(p.outcomes[4].applied);
  EXPECT_TRUE(p.outcomes[1].applied);
  ASSERT_EQ(p.store_refusals.size(), 2u);
  EXPECT_EQ(p.store_refusals[0].index, 0u);
  EXPECT_EQ(p.store_refusals[1].index, 4u);
  EXPECT_EQ(p.store_refusals[0].status.reason(), "store_error");
  EXPECT_EQ(p.rejections.size(), 1u) << "the parser's rejections are unchanged";

  // A refused trigger: RefuseInStore overrides what RecordManualFireResults recorded.
  RecordManualFireResults({ManualFireResult{Status::Ok(), 3, 0}}, &p);
  RefuseInStore({2}, Status::Invalid("sql", "no"), &p);
  EXPECT_EQ(EncodeCommandOutcome(p.outcomes[2]),
            R"({"id":"j1","op":"trigger","status":"rejected","error":"store_error: no","partition":2,"offset":12})");
}

// Issue 18: a bulk command is neither a job action nor a manual fire: it goes to `bulk`, and its
// outcome waits for the walk (deferred) unless the store refuses it.
TEST_F(PrepareCommandBatchTest, BulkCommandsAreRecordedAndTheirOutcomesDeferred) {
  std::vector<RawCommand> batch = {
      Raw("j1", R"({"id":"j1","intervalMinutes":5,"topic":"out"})", 10),
      Raw("freeze", R"({"op":"pause","id":"freeze","selector":{"owner":"o"},"reason":"r","actor":"a"})", 11),
      Raw("again", R"({"op":"delete","id":"again","selector":{"labels":{"k":"v"}},"dryRun":true})", 12),
  };
  PreparedCommandBatch p = PrepareCommandBatch(batch, rules_);
  ASSERT_EQ(p.actions.size(), 1u) << "no job action for a bulk command, not even one named by its id";
  EXPECT_TRUE(p.manual.empty());
  ASSERT_EQ(p.bulk.size(), 2u);
  EXPECT_EQ(p.bulk_outcomes, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(p.bulk[0].id, "freeze");
  EXPECT_EQ(p.bulk[0].op, CommandOp::kPause);
  EXPECT_EQ(p.bulk[0].reason, "r");
  EXPECT_EQ(p.bulk[0].actor, "a");
  EXPECT_EQ(p.bulk[0].source.offset, 11);
  EXPECT_TRUE(p.bulk[1].dry_run);
  EXPECT_TRUE(p.outcomes[1].deferred);
  EXPECT_TRUE(p.outcomes[2].deferred);

  RecordBulkAcceptResults({Status::Ok(), Status::Invalid("duplicate_bulk_id", "used")}, &p);
  EXPECT_TRUE(p.outcomes[1].deferred);
  EXPECT_FALSE(p.outcomes[2].deferred) << "a refused bulk command is answered at once";
  EXPECT_EQ(EncodeCommandOutcome(p.outcomes[2]),
            R"({"id":"again","op":"delete","status":"rejected","error":"duplicate_bulk_id: used","partition":2,"offset":12})");

  BulkOpState done;
  done.op = p.bulk[0];
  done.matched = 12;
  done.changed = 10;
  EXPECT_EQ(EncodeCommandOutcome(FinishedBulkOutcome(done)),
            R"({"id":"freeze","op":"pause","status":"applied","error":null,"selector":{"owner":"o"},)"
            R"("matched":12,"changed":10,"dryRun":false,"partition":2,"offset":11})");
}

TEST_F(PrepareCommandBatchTest, UnusableKeyGetsNoOutcomeId) {
  PreparedCommandBatch p = PrepareCommandBatch({Raw(std::string("bad\x01key"), "{}", 1), Raw(std::nullopt, "[]", 2)}, rules_);
  ASSERT_EQ(p.rejections.size(), 2u);
  EXPECT_TRUE(p.outcomes[0].id.empty());
  EXPECT_TRUE(p.outcomes[1].id.empty());
}

}  // namespace
}  // namespace belfry
