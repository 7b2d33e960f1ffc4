#include "core/command_parser.h"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "core/topic_policy.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

// 2026-11-22T13:00:00Z and a message timestamp in minute 29931187 (mod 15 = 7, mod 5 = 2).
constexpr EpochMs kStart1300 = 1'795'352'400'000;
constexpr EpochMs kMessageTs = 1'795'871'262'123;

class CommandParserTest : public ::testing::Test {
 protected:
  CommandParserTest() : policy_({"tracking.*", "eta.recompute"}, {"belfry.commands", "belfry.commands.dlq"}) {
    rules_.intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
    rules_.shard_count = 120;
    rules_.max_details_bytes = 64 * 1024;
    rules_.max_command_bytes = 256 * 1024;
    rules_.topic_policy = &policy_;
    rules_.time_zones = &SystemTimeZones();
  }

  StatusOr<Command> Parse(std::optional<std::string> key, std::optional<std::string> value) const {
    RawCommand raw;
    raw.key = std::move(key);
    raw.value = std::move(value);
    raw.source = SourcePosition{4, 1234, kMessageTs};
    return ParseCommand(raw, rules_);
  }

  // Parses `value` with key "job-1" and expects success.
  Command MustParse(const std::string& value) const {
    StatusOr<Command> r = Parse("job-1", value);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().ToString()) << " for " << value;
    return r.ok() ? r.value() : Command{};
  }

  // Parses `value` with key `key` and returns the rejection, or an ok Status if it was accepted.
  Status Reject(const std::string& value, std::optional<std::string> key = "job-1") const {
    StatusOr<Command> r = Parse(std::move(key), value);
    return r.ok() ? Status::Ok() : r.status();
  }

  TopicPolicy policy_;
  CommandRules rules_;
};

// ----------------------------------------------------------------------------------------------
// Accepted commands.

TEST_F(CommandParserTest, Project44ObjectVerbatimWithOpOmitted) {
  const std::string value = R"({"id": "shipment-42-poll", "owner": "tracking-svc",
      "startDateTime": "2026-11-22T13:00:00Z", "endDateTime": null,
      "executionInterval": "EVERY_15_MINUTES", "topic": "tracking.poll",
      "key": "shipment-42", "jobDetails": {"shipmentId": 42}})";
  const StatusOr<Command> r = Parse("shipment-42-poll", value);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Command& c = r.value();
  EXPECT_EQ(c.op, CommandOp::kUpsert);
  EXPECT_EQ(c.id, "shipment-42-poll");
  EXPECT_EQ(c.spec.id, "shipment-42-poll");
  EXPECT_EQ(c.spec.owner, "tracking-svc");
  EXPECT_EQ(c.spec.start_at, kStart1300);
  EXPECT_EQ(c.spec.end_at, std::nullopt);
  EXPECT_EQ(c.spec.interval_minutes, 15);
  EXPECT_EQ(c.spec.offset_minutes, 0);  // 13:00 is minute 0 of its quarter hour
  EXPECT_TRUE(c.spec.offset_explicit);
  EXPECT_TRUE(c.spec.offset_pinned);
  EXPECT_EQ(c.spec.topic, "tracking.poll");
  EXPECT_EQ(c.spec.key, "shipment-42");
  EXPECT_EQ(c.spec.details_json, R"({"shipmentId":42})");
  EXPECT_EQ(c.spec.shard, 110);  // FNV-1a("shipment-42-poll") % 120
  EXPECT_EQ(c.spec.shard, ShardForId("shipment-42-poll", 120));
  EXPECT_EQ(c.spec.priority, 0);
  EXPECT_EQ(c.source.partition, 4);
  EXPECT_EQ(c.source.offset, 1234);
  EXPECT_EQ(c.source.timestamp_ms, kMessageTs);
}

// Issue 18: a pause may say why and who; so may every command, for the audit trail.
TEST_F(CommandParserTest, PauseCarriesAnOptionalNote) {
  Command c = MustParse(R"({"op":"pause","id":"job-1","reason":"carrier API outage","actor":"oncall-ana"})");
  EXPECT_EQ(c.op, CommandOp::kPause);
  EXPECT_EQ(c.reason, "carrier API outage");
  EXPECT_EQ(c.actor, "oncall-ana");
  c = MustParse(R"({"op":"pause","id":"job-1"})");
  EXPECT_EQ(c.reason, "");
  EXPECT_EQ(c.actor, "");
  c = MustParse(R"({"op":"resume","id":"job-1","reason":"back"})");
  EXPECT_EQ(c.reason, "back");
  c = MustParse(R"({"op":"pause","id":"job-1","reason":")" + std::string(1024, 'r') + R"("})");
  EXPECT_EQ(c.reason.size(), 1024u);
  c = MustParse(R"({"id":"job-1","intervalMinutes":5,"topic":"tracking.poll","actor":"deploy-bot","reason":"release 42"})");
  EXPECT_EQ(c.actor, "deploy-bot");
  EXPECT_EQ(c.reason, "release 42");
  EXPECT_EQ(Reject(R"({"op":"delete","id":"job-1","actor":")" + std::string(256, 'a') + R"("})").reason(),
            "invalid_actor");
}

// Issue 18: the audit trail's actor and reason may come from the belfry-actor and belfry-reason
// headers, for every command, tombstones included; the JSON fields win over them.
TEST_F(CommandParserTest, ActorAndReasonHeadersFillTheNote) {
  RawCommand raw;
  raw.key = "job-1";
  raw.source = SourcePosition{4, 1234, kMessageTs};
  raw.actor_header = "ci-pipeline";
  raw.reason_header = "cleanup";
  StatusOr<Command> c = ParseCommand(raw, rules_);  // a tombstone
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->op, CommandOp::kDelete);
  EXPECT_EQ(c->actor, "ci-pipeline");
  EXPECT_EQ(c->reason, "cleanup");
  raw.value = R"({"op":"pause","id":"job-1","actor":"oncall-ana"})";
  c = ParseCommand(raw, rules_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->actor, "oncall-ana") << "the JSON field wins";
  EXPECT_EQ(c->reason, "cleanup");
  raw.actor_header = std::string("bad") + '\x01' + "actor";  // a control character
  c = ParseCommand(raw, rules_);
  ASSERT_TRUE(c.ok()) << "the JSON actor is used, so the header is not read";
  raw.value = R"({"op":"resume","id":"job-1"})";
  c = ParseCommand(raw, rules_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().reason(), "invalid_actor");
  EXPECT_NE(c.status().message().find("header belfry-actor"), std::string::npos) << c.status().ToString();
  raw.actor_header = "ok";
  raw.reason_header = "\xff\xfe";
  c = ParseCommand(raw, rules_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().reason(), "invalid_reason") << c.status().ToString();
}

// Issue 18: pause, resume, delete and trigger take a selector instead of naming one job; the id
// then names the operation. Reason, actor and dryRun are optional for all four.
TEST_F(CommandParserTest, BulkCommandsTakeASelector) {
  Command c = MustParse(
      R"({"op":"pause","id":"job-1","selector":{"owner":"tracking","labels":{"team":"a","env":"staging"}},)"
      R"("reason":"carrier outage","actor":"ops","dryRun":true})");
  EXPECT_EQ(c.op, CommandOp::kPause);
  ASSERT_TRUE(c.selector.has_value());
  EXPECT_EQ(c.selector->owner, std::optional<std::string>("tracking"));
  EXPECT_EQ(c.selector->labels_json, R"({"env":"staging","team":"a"})") << "canonical: keys sorted";
  EXPECT_EQ(c.reason, "carrier outage");
  EXPECT_EQ(c.actor, "ops");
  EXPECT_TRUE(c.dry_run);
  for (const char* op : {"resume", "delete", "trigger"}) {
    c = MustParse(std::string(R"({"op":")") + op + R"(","id":"job-1","selector":{"labels":{"team":"a"}},"actor":"x"})");
    ASSERT_TRUE(c.selector.has_value()) << op;
    EXPECT_FALSE(c.selector->owner.has_value());
    EXPECT_EQ(c.actor, "x") << "every bulk op records its actor";
    EXPECT_FALSE(c.dry_run);
  }
  c = MustParse(R"({"op":"delete","id":"job-1","selector":{"owner":"o","labels":{}}})");
  EXPECT_EQ(c.selector->labels_json, "") << "empty labels select by owner alone";
  EXPECT_FALSE(MustParse(R"({"op":"pause","id":"job-1"})").selector.has_value());
}

TEST_F(CommandParserTest, BulkSelectorsAreCheckedStrictly) {
  auto reason = [&](const std::string& selector, const std::string& op = "pause") {
    return Reject(R"({"op":")" + op + R"(","id":"job-1","selector":)" + selector + "}").reason();
  };
  EXPECT_EQ(reason("{}"), "invalid_selector") << "a selector must never match every job";
  EXPECT_EQ(reason(R"({"labels":{}})"), "invalid_selector");
  EXPECT_EQ(reason(R"({"owner":""})"), "invalid_selector");
  EXPECT_EQ(reason(R"("tracking")"), "invalid_selector");
  EXPECT_EQ(reason(R"({"owner":7})"), "invalid_selector");
  EXPECT_EQ(reason(R"({"owner":"a","topic":"t"})"), "invalid_selector");
  EXPECT_EQ(reason(R"({"owner":"a","owner":"b"})"), "invalid_selector");
  EXPECT_EQ(reason(R"({"owner":"a\u0001"})"), "invalid_owner");
  EXPECT_EQ(reason(R"({"labels":{"-bad":"x"}})"), "invalid_labels");
  EXPECT_EQ(reason(R"({"labels":["team"]})"), "invalid_labels");
  EXPECT_EQ(reason(R"({"owner":"a"})", "upsert"), "invalid_selector");
  EXPECT_EQ(reason(R"({"owner":"a"})", "backfill"), "invalid_selector");
  EXPECT_EQ(Reject(R"({"op":"pause","id":"job-1","selector":{"owner":"a"},"dryRun":"yes"})").reason(), "wrong_type");
  EXPECT_EQ(Reject(R"({"op":"pause","selector":{"owner":"a"}})").reason(), "missing_id")
      << "a bulk command names itself";
  EXPECT_EQ(Reject(R"({"op":"pause","id":"op-1","selector":{"owner":"a"}})").reason(), "key_mismatch")
      << "its Kafka key is its id, like every command's";
}

// Issue 18: trigger needs only the id; backfill takes a past range, a pace and a dry-run flag.
TEST_F(CommandParserTest, TriggerAndBackfill) {
  Command c = MustParse(R"({"op":"trigger","id":"job-1"})");
  EXPECT_EQ(c.op, CommandOp::kTrigger);
  EXPECT_EQ(c.id, "job-1");
  EXPECT_EQ(c.spec.shard, ShardForId("job-1", 120));

  c = MustParse(R"({"op":"backfill","id":"job-1","from":"2026-11-22T13:00:00Z","to":"2026-11-22T14:00:00Z"})");
  EXPECT_EQ(c.op, CommandOp::kBackfill);
  EXPECT_EQ(c.backfill.from_ms, kStart1300);
  EXPECT_EQ(c.backfill.to_ms, kStart1300 + 3'600'000);
  EXPECT_EQ(c.backfill.rate_per_minute, 60);
  EXPECT_FALSE(c.backfill.dry_run);

  c = MustParse(R"({"op":"backfill","id":"job-1","from":"2026-11-22T13:00:00Z","to":"2026-11-22T14:00:00Z",)"
                R"("ratePerMinute":10000,"dryRun":true})");
  EXPECT_EQ(c.backfill.rate_per_minute, 10000);
  EXPECT_TRUE(c.backfill.dry_run);

  // Up to the message's own timestamp, and exactly 366 days.
  c = MustParse(R"({"op":"backfill","id":"job-1","from":"2025-11-27T13:07:42.123Z","to":"2026-11-28T13:07:42.123Z"})");
  EXPECT_EQ(c.backfill.to_ms, kMessageTs);
  EXPECT_EQ(c.backfill.to_ms - c.backfill.from_ms, 366LL * 86'400'000);
}

TEST_F(CommandParserTest, BackfillRejections) {
  const std::string head = R"({"op":"backfill","id":"job-1",)";
  EXPECT_EQ(Reject(head + R"("from":"2026-11-22T13:00:00Z"})").reason(), "missing_field");
  EXPECT_EQ(Reject(head + R"("to":"2026-11-22T13:00:00Z"})").reason(), "missing_field");
  EXPECT_EQ(Reject(head + R"("from":"2026-11-22T14:00:00Z","to":"2026-11-22T14:00:00Z"})").reason(),
            "invalid_backfill");
  // One millisecond after the message timestamp is the future.
  EXPECT_EQ(Reject(head + R"("from":"2026-11-22T14:00:00Z","to":"2026-11-28T13:07:42.124Z"})").reason(),
            "invalid_backfill");
  EXPECT_EQ(Reject(head + R"("from":"2025-11-27T13:07:42.122Z","to":"2026-11-28T13:07:42.123Z"})").reason(),
            "invalid_backfill");
  const std::string range = R"("from":"2026-11-22T13:00:00Z","to":"2026-11-22T14:00:00Z")";
  EXPECT_EQ(Reject(head + range + R"(,"ratePerMinute":0})").reason(), "invalid_rate");
  EXPECT_EQ(Reject(head + range + R"(,"ratePerMinute":10001})").reason(), "invalid_rate");
  EXPECT_EQ(Reject(head + range + R"(,"ratePerMinute":1.5})").reason(), "invalid_rate");
  EXPECT_EQ(Reject(head + range + R"(,"ratePerMinute":"5"})").reason(), "wrong_type");
  EXPECT_EQ(Reject(head + range + R"(,"dryRun":1})").reason(), "wrong_type");
  EXPECT_EQ(Reject(head + R"("from":"soon","to":"2026-11-22T14:00:00Z"})").reason(), "invalid_date");
  // The reserved markers, in any op.
  EXPECT_EQ(Reject(R"({"op":"trigger","id":"a#trigger#1"})", "a#trigger#1").reason(), "invalid_id");
  EXPECT_EQ(Reject(R"({"op":"delete","id":"a#backfill#1"})", "a#backfill#1").reason(), "invalid_id");
  EXPECT_EQ(Reject(R"({"op":"pause","id":"a#retry#1#1"})", "a#retry#1#1").reason(), "invalid_id");
  EXPECT_TRUE(Reject(R"({"op":"trigger","id":"a#trig#1"})", "a#trig#1").ok());
}

// docs/fire-limits.md: the count starts at the command's timestamp; end_at stops the job after its
// maxFires-th slot, endDateTime stays as asked.
TEST_F(CommandParserTest, MaxFiresEndsTheJobAfterItsLastSlot) {
  const int32_t shard = ShardForId("job-1", 120);
  Command c = MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5,"maxFires":3})");
  ASSERT_EQ(c.spec.max_fires, 3);
  EXPECT_EQ(c.spec.fires_before, 0);
  EXPECT_EQ(c.spec.fires_from_ms, kMessageTs);
  EXPECT_FALSE(c.spec.requested_end_at.has_value());
  // Offset 2 (the message's minute mod 5): slots in minutes M, M+5, M+10 if M's slot is not yet past.
  const int64_t m = EpochMinuteOf(kMessageTs);
  const int64_t first = SlotMs(m, shard, 500) >= kMessageTs ? m : m + 5;
  EXPECT_EQ(c.spec.end_at, (first + 10 + 1) * 60'000);

  c = MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5,"maxFires":100,)"
                R"("endDateTime":"2026-11-28T14:00:00Z"})");
  EXPECT_EQ(c.spec.requested_end_at, c.spec.end_at) << "the asked end comes first";
  c = MustParse(R"({"id":"job-1","topic":"tracking.poll","cron":"0 9 * * *","timeZone":"Asia/Tokyo","maxFires":1})");
  EXPECT_EQ(c.spec.max_fires, 1);
  ASSERT_TRUE(c.spec.end_at.has_value());
  EXPECT_EQ(NextJobTriggerTimes(SystemTimeZones(), c.spec, 500, kMessageTs, 5).size(), 1u);
  c = MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5})");
  EXPECT_FALSE(c.spec.max_fires.has_value());
  EXPECT_FALSE(c.spec.end_at.has_value());

  EXPECT_EQ(Reject(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5,"maxFires":0})").reason(),
            "invalid_max_fires");
  EXPECT_EQ(Reject(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5,"maxFires":100001})").reason(),
            "invalid_max_fires");
  EXPECT_EQ(Reject(R"({"id":"job-1","topic":"tracking.poll","runAt":"2026-11-28T14:00:00Z","maxFires":1})").reason(),
            "invalid_max_fires");
  EXPECT_EQ(Reject(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5,"maxFires":true})").reason(),
            "wrong_type");
}

TEST_F(CommandParserTest, LabelsAreStoredCanonical) {
  Command c = MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5,)"
                        R"("labels":{"team":"tracking","carrier":"acme"}})");
  EXPECT_EQ(c.spec.labels_json, R"({"carrier":"acme","team":"tracking"})");
  c = MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5})");
  EXPECT_EQ(c.spec.labels_json, "");
  EXPECT_EQ(Reject(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5,"labels":{"a b":"x"}})").reason(),
            "invalid_labels");
}

TEST_F(CommandParserTest, ExplicitUpsertOp) {
  const Command c = MustParse(R"({"op":"upsert","id":"job-1","topic":"tracking.poll","intervalMinutes":5})");
  EXPECT_EQ(c.op, CommandOp::kUpsert);
  EXPECT_EQ(c.spec.interval_minutes, 5);
}

TEST_F(CommandParserTest, IntervalMinutesWithOffsetFromMessageTimestamp) {
  const Command c = MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":5})");
  EXPECT_EQ(c.spec.interval_minutes, 5);
  EXPECT_EQ(c.spec.offset_minutes, 2);  // minute 29931187 mod 5
  EXPECT_FALSE(c.spec.offset_explicit);
  EXPECT_FALSE(c.spec.offset_pinned);
  EXPECT_EQ(c.spec.start_at, std::nullopt);
  EXPECT_EQ(c.spec.details_json, "{}");
  EXPECT_EQ(c.spec.key, "");
  EXPECT_EQ(c.spec.owner, "");
}

TEST_F(CommandParserTest, OffsetFromMessageTimestampForFifteenMinutes) {
  const Command c =
      MustParse(R"({"id":"job-1","topic":"tracking.poll","executionInterval":"EVERY_15_MINUTES"})");
  EXPECT_EQ(c.spec.offset_minutes, 7);  // minute 29931187 mod 15
  EXPECT_FALSE(c.spec.offset_explicit);
  EXPECT_FALSE(c.spec.offset_pinned);
}

TEST_F(CommandParserTest, OffsetFromStartDateTime) {
  const Command c = MustParse(
      R"({"id":"job-1","topic":"tracking.poll","executionInterval":"EVERY_15_MINUTES",
          "startDateTime":"2026-11-22T13:07:59.999Z"})");
  EXPECT_EQ(c.spec.start_at, kStart1300 + 7 * 60'000 + 59'999);
  EXPECT_EQ(c.spec.offset_minutes, 7);
  EXPECT_TRUE(c.spec.offset_explicit);
  EXPECT_TRUE(c.spec.offset_pinned);
}

TEST_F(CommandParserTest, OffsetFromStartDateTimeWithZoneOffset) {
  // 14:07+01:00 is 13:07Z: minute-of-day 787, and 787 mod 360 = 67.
  const Command c = MustParse(
      R"({"id":"job-1","topic":"tracking.poll","executionInterval":"EVERY_6_HOURS",
          "startDateTime":"2026-11-22T14:07:00+01:00"})");
  EXPECT_EQ(c.spec.interval_minutes, 360);
  EXPECT_EQ(c.spec.offset_minutes, 67);
  EXPECT_TRUE(c.spec.offset_explicit);
  EXPECT_TRUE(c.spec.offset_pinned);
}

TEST_F(CommandParserTest, ExplicitOffsetWinsOverStartDateTime) {
  const Command c = MustParse(
      R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":15,"offsetMinutes":11,
          "startDateTime":"2026-11-22T13:07:00Z"})");
  EXPECT_EQ(c.spec.offset_minutes, 11);
  EXPECT_TRUE(c.spec.offset_explicit);
  EXPECT_TRUE(c.spec.offset_pinned);
}

TEST_F(CommandParserTest, ExplicitOffsetZeroAndMaximum) {
  EXPECT_EQ(MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":60,"offsetMinutes":0})")
                .spec.offset_minutes,
            0);
  const Command c =
      MustParse(R"({"id":"job-1","topic":"tracking.poll","intervalMinutes":60,"offsetMinutes":59})");
  EXPECT_EQ(c.spec.offset_minutes, 59);
  EXPECT_TRUE(c.spec.offset_explicit);
  EXPECT_TRUE(c.spec.offset_pinned);
}

TEST_F(CommandParserTest, IntervalNames) {
  EXPECT_EQ(MustParse(R"({"id":"job-1","topic":"tracking.a","executionInterval":"EVERY_MINUTE"})")
                .spec.interval_minutes,
            1);
  EXPECT_EQ(MustParse(R"({"id":"job-1","topic":"tracking.a","executionInterval":"EVERY_HOUR"})")
                .spec.interval_minutes,
            60);
  EXPECT_EQ(MustParse(R"({"id":"job-1","topic":"tracking.a","executionInterval":"EVERY_6_HOURS"})")
                .spec.interval_minutes,
            360);
  EXPECT_EQ(MustParse(R"({"id":"job-1","topic":"tracking.a","executionInterval":"EVERY_24_HOURS"})")
                .spec.interval_minutes,
            1440);
  EXPECT_EQ(MustParse(R"({"id":"job-1","topic":"tracking.a","executionInterval":"EVERY_1_MINUTES"})")
                .spec.interval_minutes,
            1);
}

TEST_F(CommandParserTest, BothIntervalFormsMayAgree) {
  const Command c = MustParse(
      R"({"id":"job-1","topic":"tracking.a","executionInterval":"EVERY_HOUR","intervalMinutes":60})");
  EXPECT_EQ(c.spec.interval_minutes, 60);
}

TEST_F(CommandParserTest, EveryMinuteHasOffsetZero) {
  const Command c = MustParse(R"({"id":"job-1","topic":"tracking.a","intervalMinutes":1})");
  EXPECT_EQ(c.spec.offset_minutes, 0);
}

TEST_F(CommandParserTest, EndDateTime) {
  const Command c = MustParse(
      R"({"id":"job-1","topic":"tracking.a","intervalMinutes":5,"startDateTime":"2026-11-22T13:00:00Z",
          "endDateTime":"2026-11-22T13:00:00.001Z"})");
  EXPECT_EQ(c.spec.end_at, kStart1300 + 1);
}

TEST_F(CommandParserTest, NullsAndEmptyStringsMeanAbsent) {
  const Command c = MustParse(
      R"({"op":null,"id":"job-1","owner":null,"startDateTime":"","endDateTime":null,"executionInterval":null,
          "intervalMinutes":10,"offsetMinutes":null,"topic":"tracking.a","key":"","jobDetails":null,
          "priority":null})");
  EXPECT_EQ(c.op, CommandOp::kUpsert);
  EXPECT_EQ(c.spec.interval_minutes, 10);
  EXPECT_EQ(c.spec.start_at, std::nullopt);
  EXPECT_EQ(c.spec.end_at, std::nullopt);
  EXPECT_FALSE(c.spec.offset_explicit);
  EXPECT_FALSE(c.spec.offset_pinned);
  EXPECT_EQ(c.spec.key, "");
  EXPECT_EQ(c.spec.details_json, "{}");
  EXPECT_EQ(c.spec.priority, 0);
}

TEST_F(CommandParserTest, DetailsAreMinified) {
  const Command c = MustParse(R"({"id":"job-1","topic":"tracking.a","intervalMinutes":5,
      "jobDetails": { "a" : [ 1, 2.5, {"b" : "c\n\u00e9"} ] ,
                      "n" : null, "t": true } })");
  EXPECT_EQ(c.spec.details_json, "{\"a\":[1,2.5,{\"b\":\"c\\n\xc3\xa9\"}],\"n\":null,\"t\":true}");
}

TEST_F(CommandParserTest, DetailsAtTheSizeLimitAreAccepted) {
  rules_.max_details_bytes = 20;
  // {"pad":"<n>"} is 10 + n bytes.
  EXPECT_TRUE(
      Parse("job-1", R"({"id":"job-1","topic":"tracking.a","intervalMinutes":5,"jobDetails":{"pad":")" +
                         std::string(10, 'x') + "\"}}")
          .ok());
  EXPECT_EQ(Reject(R"({"id":"job-1","topic":"tracking.a","intervalMinutes":5,"jobDetails":{"pad":")" +
                   std::string(11, 'x') + "\"}}")
                .reason(),
            "details_too_large");
}

TEST_F(CommandParserTest, PriorityOwnerAndKey) {
  const Command c = MustParse(R"({"id":"job-1","topic":"eta.recompute","intervalMinutes":5,
      "priority":-1000000,"owner":"eta-svc","key":"shipment-42"})");
  EXPECT_EQ(c.spec.priority, -1000000);
  EXPECT_EQ(c.spec.owner, "eta-svc");
  EXPECT_EQ(c.spec.key, "shipment-42");
  EXPECT_EQ(MustParse(R"({"id":"job-1","topic":"eta.recompute","intervalMinutes":5,"priority":1000000})")
                .spec.priority,
            1000000);
}

TEST_F(CommandParserTest, LengthLimitsAreInclusive) {
  const std::string id(255, 'i');
  const StatusOr<Command> r =
      Parse(id, R"({"id":")" + id + R"(","topic":"tracking.a","intervalMinutes":5,"owner":")" +
                    std::string(255, 'o') + R"(","key":")" + std::string(1024, 'k') + "\"}");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id.size(), 255u);
  EXPECT_EQ(r->spec.owner.size(), 255u);
  EXPECT_EQ(r->spec.key.size(), 1024u);
}

TEST_F(CommandParserTest, UnicodeIdIsAccepted) {
  const std::string id = "\xd0\xb7\xd0\xb0\xd0\xba\xd0\xb0\xd0\xb7-42-\xf0\x9f\x9a\x9a";  // "заказ-42-🚚"
  const StatusOr<Command> r = Parse(id, R"({"id":")" + id + R"(","topic":"tracking.a","intervalMinutes":5})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, id);
  // The same id written with JSON escapes is the same id, byte for byte.
  const StatusOr<Command> escaped = Parse(
      id,
      R"({"id":"\u0437\u0430\u043a\u0430\u0437-42-\ud83d\ude9a","topic":"tracking.a","intervalMinutes":5})");
  ASSERT_TRUE(escaped.ok()) << escaped.status().ToString();
  EXPECT_EQ(escaped->id, id);
}

TEST_F(CommandParserTest, NestingOfThirtyTwoLevelsIsAccepted) {
  // The root object is level 1; jobDetails adds 31 more.
  std::string details;
  for (int i = 0; i < 30; ++i) details += "{\"a\":";
  details += "[]";
  for (int i = 0; i < 30; ++i) details += "}";
  const Command c =
      MustParse(R"({"id":"job-1","topic":"tracking.a","intervalMinutes":5,"jobDetails":)" + details + "}");
  EXPECT_EQ(c.spec.details_json, details);
}

TEST_F(CommandParserTest, CommandAtTheSizeLimitIsAccepted) {
  const std::string head = R"({"id":"job-1","topic":"tracking.a","intervalMinutes":5,"owner":")";
  rules_.max_command_bytes = static_cast<int64_t>(head.size() + 10 + 2);
  EXPECT_TRUE(Parse("job-1", head + std::string(10, 'o') + "\"}").ok());
  EXPECT_EQ(Reject(head + std::string(11, 'o') + "\"}").reason(), "too_large");
}

TEST_F(CommandParserTest, DeletePauseResumeNeedOnlyId) {
  const Command d = MustParse(R"({"op":"delete","id":"job-1"})");
  EXPECT_EQ(d.op, CommandOp::kDelete);
  EXPECT_EQ(d.id, "job-1");
  EXPECT_EQ(d.spec.shard, ShardForId("job-1", 120));
  EXPECT_EQ(MustParse(R"({"op":"pause","id":"job-1"})").op, CommandOp::kPause);
  EXPECT_EQ(MustParse(R"({"op":"resume","id":"job-1"})").op, CommandOp::kResume);
}

TEST_F(CommandParserTest, NonUpsertOpsIgnoreTheOtherFields) {
  const Command c = MustParse(
      R"({"op":"pause","id":"job-1","topic":"belfry.commands","intervalMinutes":7,"offsetMinutes":"x",
          "startDateTime":"never","jobDetails":[1]})");
  EXPECT_EQ(c.op, CommandOp::kPause);
  // Unknown and duplicate fields are still refused.
  EXPECT_EQ(Reject(R"({"op":"delete","id":"job-1","crontab":"*"})").reason(), "unknown_field");
  EXPECT_EQ(Reject(R"({"op":"delete","id":"job-1","id":"job-1"})").reason(), "duplicate_field");
}

TEST_F(CommandParserTest, TombstoneIsADelete) {
  const StatusOr<Command> r = Parse("job-7", std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->op, CommandOp::kDelete);
  EXPECT_EQ(r->id, "job-7");
  EXPECT_EQ(r->spec.shard, ShardForId("job-7", 120));
  EXPECT_EQ(r->source.offset, 1234);
}

TEST_F(CommandParserTest, ShardFollowsShardCount) {
  rules_.shard_count = 60;
  for (const std::string id : {"a", "job-1", "shipment-42-poll", "x/y/z"}) {
    const StatusOr<Command> r = Parse(id, R"({"op":"resume","id":")" + id + "\"}");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->spec.shard, ShardForId(id, 60));
    EXPECT_LT(r->spec.shard, 60);
  }
}

TEST_F(CommandParserTest, IsThreadSafe) {
  const std::string value =
      R"({"id":"job-1","topic":"tracking.a","intervalMinutes":15,"jobDetails":{"k":[1,2,3]}})";
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const StatusOr<Command> ok = Parse("job-1", value);
        const StatusOr<Command> bad = Parse("job-1", "[1,2]");
        if (!ok.ok() || ok->spec.details_json != R"({"k":[1,2,3]})" || bad.ok()) ++failures[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

// ----------------------------------------------------------------------------------------------
// Rejections: every rule at least once.

struct RejectCase {
  const char* name;
  std::optional<std::string> key;
  std::optional<std::string> value;
  const char* reason;
  const char* message_part;  // a substring the message must contain
};

void PrintTo(const RejectCase& c, std::ostream* os) { *os << c.name; }

class CommandParserRejectTest : public CommandParserTest, public ::testing::WithParamInterface<RejectCase> {};

TEST_P(CommandParserRejectTest, Rejects) {
  const RejectCase& c = GetParam();
  const StatusOr<Command> r = Parse(c.key, c.value);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalid);
  EXPECT_EQ(r.status().reason(), c.reason) << r.status().ToString();
  EXPECT_NE(r.status().message().find(c.message_part), std::string::npos) << r.status().ToString();
}

const std::string kJob = R"("id":"job-1","topic":"tracking.a")";

std::string Obj(const std::string& fields) { return "{" + fields + "}"; }
std::string Upsert(const std::string& extra, const std::string& interval = R"("intervalMinutes":15)") {
  return Obj(kJob + "," + interval + (extra.empty() ? "" : "," + extra));
}

INSTANTIATE_TEST_SUITE_P(
    AllRules, CommandParserRejectTest,
    ::testing::Values(
        RejectCase{"TombstoneWithoutKey", std::nullopt, std::nullopt, "missing_id", "tombstone"},
        RejectCase{"TombstoneEmptyKey", "", std::nullopt, "missing_id", "empty"},
        RejectCase{"TombstoneControlKey", std::string("a\x01", 2), std::nullopt, "invalid_id", "\\x01"},
        RejectCase{"TombstoneInvalidUtf8Key", "a\xff", std::nullopt, "invalid_id", "UTF-8"},
        RejectCase{"TooLarge", "job-1", std::string(256 * 1024 + 1, ' '), "too_large", "262145 bytes"},
        RejectCase{"InvalidUtf8", "job-1", "{\"id\":\"job-1\xc0\xaf\"}", "invalid_utf8", "offset 12"},
        RejectCase{"NotJson", "job-1", "job-1 please", "invalid_json", "not JSON"},
        RejectCase{"Truncated", "job-1", R"({"id":"job-1","topic")", "invalid_json", "not JSON"},
        RejectCase{"Empty", "job-1", "", "invalid_json", "empty"},
        RejectCase{"BadEscape", "job-1", R"({"id":"job-\q"})", "invalid_json", "escape"},
        RejectCase{"LoneSurrogateEscape", "job-1", R"({"id":"job-1","owner":"\udc00"})", "invalid_json",
                   "surrogate"},
        RejectCase{"TooDeep", "job-1", std::string(33, '[') + std::string(33, ']'), "too_deep", "32"},
        RejectCase{"HugeNumber", "job-1", Upsert("", R"("intervalMinutes":1e999)"), "invalid_number",
                   "range"},
        RejectCase{"NotObject", "job-1", "[]", "not_object", "an array"},
        RejectCase{"NotObjectString", "job-1", R"("job-1")", "not_object", "a string"},
        RejectCase{"UnknownField", "job-1", Upsert(R"("crontab":"*")"), "unknown_field", "\"crontab\""},
        RejectCase{"DuplicateField", "job-1", Upsert(R"("topic":"tracking.b")"), "duplicate_field",
                   "\"topic\""},
        RejectCase{"WrongTypeOp", "job-1", Upsert(R"("op":true)"), "wrong_type", "\"op\" must be a string"},
        RejectCase{"WrongTypeId", "job-1", R"({"id":["job-1"]})", "wrong_type", "\"id\""},
        RejectCase{"WrongTypeOwner", "job-1", Upsert(R"("owner":1)"), "wrong_type", "\"owner\""},
        RejectCase{"WrongTypeStart", "job-1", Upsert(R"("startDateTime":0)"), "wrong_type",
                   "\"startDateTime\""},
        RejectCase{"WrongTypeEnd", "job-1", Upsert(R"("endDateTime":{})"), "wrong_type", "\"endDateTime\""},
        RejectCase{"WrongTypeExecutionInterval", "job-1", Upsert("", R"("executionInterval":15)"),
                   "wrong_type", "\"executionInterval\""},
        RejectCase{"WrongTypeIntervalMinutes", "job-1", Upsert("", R"("intervalMinutes":"15")"), "wrong_type",
                   "\"intervalMinutes\" must be an integer number, not a string"},
        RejectCase{"WrongTypeOffset", "job-1", Upsert(R"("offsetMinutes":[])"), "wrong_type",
                   "\"offsetMinutes\""},
        RejectCase{"WrongTypeTopic", "job-1", Obj(R"("id":"job-1","intervalMinutes":5,"topic":5)"),
                   "wrong_type", "\"topic\""},
        RejectCase{"WrongTypeKey", "job-1", Upsert(R"("key":false)"), "wrong_type", "\"key\""},
        RejectCase{"WrongTypePriority", "job-1", Upsert(R"("priority":"1")"), "wrong_type", "\"priority\""},
        RejectCase{"UnknownOp", "job-1", Upsert(R"("op":"explode")"), "unknown_op", "\"explode\""},
        RejectCase{"MissingId", "job-1", R"({"op":"delete"})", "missing_id", "no id"},
        RejectCase{"EmptyId", "", R"({"op":"delete","id":""})", "missing_id", "empty"},
        RejectCase{"LongId", std::string(256, 'a'),
                   Obj(R"("op":"delete","id":")" + std::string(256, 'a') + "\""), "invalid_id", "256 bytes"},
        RejectCase{"ControlId", "a\tb", R"({"op":"delete","id":"a\tb"})", "invalid_id", "0x09"},
        RejectCase{"NulId", std::string("a\0b", 3), R"({"op":"delete","id":"a\u0000b"})", "invalid_id",
                   "0x00"},
        RejectCase{"DelId", "a\x7f", R"({"op":"delete","id":"a\u007f"})", "invalid_id", "0x7f"},
        RejectCase{"KeyMismatch", "job-2", R"({"op":"delete","id":"job-1"})", "key_mismatch", "\"job-2\""},
        RejectCase{"KeyMissing", std::nullopt, R"({"op":"delete","id":"job-1"})", "key_mismatch",
                   "no Kafka key"},
        RejectCase{"KeyPrefixOfId", "job-", R"({"op":"delete","id":"job-1"})", "key_mismatch", "differs"},
        RejectCase{"MissingTopic", "job-1", R"({"id":"job-1","intervalMinutes":5})", "missing_field",
                   "topic"},
        RejectCase{"MissingInterval", "job-1", Obj(kJob), "missing_field", "interval"},
        RejectCase{"IntervalNotConfigured", "job-1", Upsert("", R"("intervalMinutes":7)"),
                   "unsupported_interval",
                   "intervalMinutes 7 is not one of the configured intervals "
                   "1,2,3,5,10,15,20,30,60,120,180,240,360,480,720,1440"},
        RejectCase{"IntervalZero", "job-1", Upsert("", R"("intervalMinutes":0)"), "unsupported_interval",
                   "0"},
        RejectCase{"IntervalNegative", "job-1", Upsert("", R"("intervalMinutes":-5)"), "unsupported_interval",
                   "-5"},
        RejectCase{"IntervalFraction", "job-1", Upsert("", R"("intervalMinutes":1.5)"),
                   "unsupported_interval", "not an integer"},
        RejectCase{"IntervalHuge", "job-1", Upsert("", R"("intervalMinutes":9007199254740993)"),
                   "unsupported_interval", "9007199254740993"},
        RejectCase{"IntervalUint64", "job-1", Upsert("", R"("intervalMinutes":18446744073709551615)"),
                   "unsupported_interval", "out of range"},
        RejectCase{"IntervalNameUnknown", "job-1", Upsert("", R"("executionInterval":"EVERY_FORTNIGHT")"),
                   "unsupported_interval", "EVERY_FORTNIGHT"},
        RejectCase{"IntervalNameNotConfigured", "job-1",
                   Upsert("", R"("executionInterval":"EVERY_7_MINUTES")"), "unsupported_interval",
                   "(7 minutes) is not one of the configured intervals"},
        RejectCase{"ConflictingInterval", "job-1",
                   Upsert("", R"("executionInterval":"EVERY_HOUR","intervalMinutes":30)"),
                   "conflicting_interval", "disagrees with intervalMinutes 30"},
        RejectCase{"OffsetNegative", "job-1", Upsert(R"("offsetMinutes":-1)"), "offset_out_of_range",
                   "[0, 15)"},
        RejectCase{"OffsetEqualsInterval", "job-1", Upsert(R"("offsetMinutes":15)"), "offset_out_of_range",
                   "15"},
        RejectCase{"OffsetFraction", "job-1", Upsert(R"("offsetMinutes":0.5)"), "offset_out_of_range", "0.5"},
        RejectCase{"OffsetUint64", "job-1", Upsert(R"("offsetMinutes":10000000000000000000)"),
                   "offset_out_of_range", "offsetMinutes"},
        RejectCase{"StartImpossible", "job-1", Upsert(R"("startDateTime":"2026-02-30T00:00:00Z")"),
                   "invalid_date", "startDateTime \"2026-02-30T00:00:00Z\""},
        RejectCase{"EndGarbage", "job-1", Upsert(R"("endDateTime":"tomorrow")"), "invalid_date",
                   "endDateTime"},
        RejectCase{
            "EndBeforeStart", "job-1",
            Upsert(R"("startDateTime":"2026-11-22T13:00:00Z","endDateTime":"2026-11-22T12:59:59.999Z")"),
            "end_before_start", "2026-11-22T12:59:59.999Z"},
        RejectCase{"EndEqualsStart", "job-1",
                   Upsert(R"("startDateTime":"2026-11-22T13:00:00Z","endDateTime":"2026-11-22T13:00:00Z")"),
                   "end_before_start", "not after"},
        RejectCase{"InvalidTopic", "job-1", Obj(R"("id":"job-1","intervalMinutes":5,"topic":"a b")"),
                   "invalid_topic", "\"a b\""},
        RejectCase{"EmptyTopic", "job-1", Obj(R"("id":"job-1","intervalMinutes":5,"topic":"")"),
                   "invalid_topic", "valid Kafka topic"},
        RejectCase{"ReservedTopic", "job-1",
                   Obj(R"("id":"job-1","intervalMinutes":5,"topic":"belfry.commands")"), "forbidden_topic",
                   "belfry's own"},
        RejectCase{"InternalTopic", "job-1",
                   Obj(R"("id":"job-1","intervalMinutes":5,"topic":"__transaction_state")"),
                   "forbidden_topic", "internal"},
        RejectCase{"TopicNotAllowed", "job-1",
                   Obj(R"("id":"job-1","intervalMinutes":5,"topic":"billing.charge")"), "forbidden_topic",
                   "allowlist"},
        RejectCase{"KeyTooLong", "job-1", Upsert(R"("key":")" + std::string(1025, 'k') + "\""), "invalid_key",
                   "1025 bytes"},
        RejectCase{"KeyWithNul", "job-1", Upsert(R"("key":"a\u0000")"), "invalid_key", "NUL"},
        RejectCase{"OwnerTooLong", "job-1", Upsert(R"("owner":")" + std::string(256, 'o') + "\""),
                   "invalid_owner", "256 bytes"},
        RejectCase{"OwnerControl", "job-1", Upsert(R"("owner":"a\rb")"), "invalid_owner", "\"a\\x0db\""},
        RejectCase{"PriorityTooLow", "job-1", Upsert(R"("priority":-1000001)"), "invalid_priority",
                   "[-1000000, 1000000]"},
        RejectCase{"PriorityFraction", "job-1", Upsert(R"("priority":1.5)"), "invalid_priority", "1.5"},
        RejectCase{"RetriesNegative", "job-1", Upsert(R"("maxRetries":-1)"), "invalid_retries", "-1"},
        RejectCase{"RetriesTooMany", "job-1", Upsert(R"("maxRetries":101)"), "invalid_retries", "[0, 100]"},
        RejectCase{"RetriesString", "job-1", Upsert(R"("maxRetries":"3")"), "invalid_retries", "\"3\""},
        // Found by the fuzzer: the value is echoed, and a DEL inside it must be escaped.
        RejectCase{"RetriesObjectWithControlChars", "job-1", Upsert(R"("maxRetries":{"a\u007fb\u0001":1})"),
                   "invalid_retries", R"({"a\x7fb\u0001":1})"},
        RejectCase{"BackoffUnknownMemberWithControlChar", "job-1",
                   Upsert(R"("retryBackoff":{"ji\u007ftter":1})"), "invalid_retry_backoff", R"("ji\x7ftter")"},
        RejectCase{"BackoffNotObject", "job-1", Upsert(R"("retryBackoff":60)"), "wrong_type", "retryBackoff"},
        RejectCase{"BackoffUnknownMember", "job-1", Upsert(R"("retryBackoff":{"jitter":1})"),
                   "invalid_retry_backoff", "\"jitter\""},
        RejectCase{"BackoffZeroInitial", "job-1", Upsert(R"("retryBackoff":{"initialSeconds":0})"),
                   "invalid_retry_backoff", "initialSeconds"},
        RejectCase{"BackoffMultiplierBelowOne", "job-1", Upsert(R"("retryBackoff":{"multiplier":0.5})"),
                   "invalid_retry_backoff", "multiplier"},
        RejectCase{"BackoffCapBelowInitial", "job-1",
                   Upsert(R"("retryBackoff":{"initialSeconds":600,"maxSeconds":60})"), "invalid_retry_backoff",
                   "below"},
        RejectCase{"BackoffDuplicateMember", "job-1",
                   Upsert(R"("retryBackoff":{"maxSeconds":60,"maxSeconds":61})"), "invalid_retry_backoff",
                   "more than once"},
        RejectCase{"ReservedRetryId", "a#retry#1#1", Obj(R"("id":"a#retry#1#1","topic":"tracking.poll","intervalMinutes":15)"),
                   "invalid_id", "reserves"},
        RejectCase{"DetailsNotObject", "job-1", Upsert(R"("jobDetails":[])"), "invalid_details",
                   "must be an object, not an array"},
        RejectCase{"DetailsNumber", "job-1", Upsert(R"("jobDetails":42)"), "invalid_details", "a number"},
        RejectCase{"DetailsWithNul", "job-1", Upsert(R"("jobDetails":{"a\u0000":1})"), "invalid_details",
                   "NUL"},
        RejectCase{"DetailsTooLarge", "job-1",
                   Upsert(R"("jobDetails":{"p":")" + std::string(64 * 1024, 'd') + "\"}"),
                   "details_too_large", "65544 bytes minified; the limit is 65536"}),
    [](const ::testing::TestParamInfo<RejectCase>& info) { return std::string(info.param.name); });

// ----------------------------------------------------------------------------------------------
// Messages echo little, and nothing unprintable.

TEST_F(CommandParserTest, MessagesTruncateEchoedInput) {
  const std::string long_name(5000, 'f');
  const Status s = Reject(Upsert("\"" + long_name + "\":1"));
  EXPECT_EQ(s.reason(), "unknown_field");
  EXPECT_NE(s.message().find("... (5000 bytes)"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find(std::string(101, 'f')), std::string::npos);
  // The message names the 26 known fields too (about 290 bytes of it); the echo adds at most ~120.
  EXPECT_LT(s.message().size(), 450u);
}

TEST_F(CommandParserTest, MessagesEscapeControlCharactersAndQuotes) {
  const Status s = Reject(Upsert(R"("a\u0000\n\u001b[31m\"\\\u0085":1)"));
  EXPECT_EQ(s.reason(), "unknown_field");
  EXPECT_NE(s.message().find(R"("a\x00\x0a\x1b[31m\"\\\u0085")"), std::string::npos) << s.message();
}

TEST_F(CommandParserTest, MessagesEscapeInvalidUtf8InKafkaKey) {
  const Status s = Reject(R"({"op":"delete","id":"job-1"})", std::string("\xff\xfejob\x01", 6));
  EXPECT_EQ(s.reason(), "key_mismatch");
  EXPECT_NE(s.message().find(R"("\xff\xfejob\x01")"), std::string::npos) << s.message();
}

TEST_F(CommandParserTest, UnknownFieldIsReportedBeforeBadValues) {
  // Fields are collected in document order first; value rules run afterwards.
  EXPECT_EQ(Reject(R"({"id":5,"bogus":1})").reason(), "unknown_field");
}

}  // namespace
}  // namespace belfry
