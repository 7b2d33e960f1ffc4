// The shared contract vectors (contracts/vectors, docs/contracts.md) against belfry's real parsers
// and encoders: every valid command parses to the expected op, id, note and normalised job (or
// backfill range, or bulk selector), every invalid one is rejected with the expected reason;
// every trigger case encodes to the exact value, key and header values; every execution report
// parses or is rejected as its vector says; every command outcome and change event encodes to the
// exact value. The Java and Python client libraries read the same files.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "belfry/command.h"
#include "belfry/execution.h"
#include "belfry/job.h"
#include "belfry/job_change.h"
#include "belfry/trigger_sink.h"
#include "core/bulk_selector.h"
#include "core/command_batch.h"
#include "core/command_parser.h"
#include "core/execution_report.h"
#include "core/iso_time.h"
#include "core/job_change.h"
#include "core/job_json.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "core/topic_policy.h"
#include "core/trigger_encoder.h"
#include "tzdb/system_time_zone_database.h"

#ifndef BELFRY_VECTORS_DIR
#error "BELFRY_VECTORS_DIR must name contracts/vectors"
#endif

namespace belfry {
namespace {

using simdjson::dom::element;

// One vectors file, parsed; the elements stay valid as long as the VectorFile lives.
class VectorFile {
 public:
  explicit VectorFile(const std::string& name) {
    const std::string path = std::string(BELFRY_VECTORS_DIR) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      ADD_FAILURE() << "cannot read " << path;
      return;
    }
    if (const auto error = parser_.parse(text.str()).get(root_); error != simdjson::SUCCESS) {
      ADD_FAILURE() << path << " is not JSON: " << simdjson::error_message(error);
    }
  }

  element root() const { return root_; }

  std::vector<element> Cases(const char* list) const {
    std::vector<element> out;
    simdjson::dom::array array;
    if (root_[list].get_array().get(array) != simdjson::SUCCESS) {
      ADD_FAILURE() << "no array \"" << list << "\"";
      return out;
    }
    for (const element el : array) out.push_back(el);
    EXPECT_FALSE(out.empty()) << list;
    return out;
  }

 private:
  simdjson::dom::parser parser_;
  element root_;
};

bool Has(const element& el, const char* field) { return el[field].error() == simdjson::SUCCESS; }

bool IsNull(const element& el, const char* field) { return !Has(el, field) || el[field].is_null(); }

std::string Str(const element& el, const char* field) {
  std::string_view s;
  EXPECT_EQ(el[field].get_string().get(s), simdjson::SUCCESS) << field;
  return std::string(s);
}

std::optional<std::string> OptStr(const element& el, const char* field) {
  if (IsNull(el, field)) return std::nullopt;
  return Str(el, field);
}

int64_t Int(const element& el, const char* field) {
  int64_t v = 0;
  EXPECT_EQ(el[field].get_int64().get(v), simdjson::SUCCESS) << field;
  return v;
}

std::optional<int64_t> OptInt(const element& el, const char* field) {
  if (IsNull(el, field)) return std::nullopt;
  return Int(el, field);
}

bool Bool(const element& el, const char* field) {
  bool v = false;
  EXPECT_EQ(el[field].get_bool().get(v), simdjson::SUCCESS) << field;
  return v;
}

std::string Minified(const element& el, const char* field) { return simdjson::minify(el[field].value()); }

std::vector<int64_t> Ints(const element& el, const char* field) {
  std::vector<int64_t> out;
  simdjson::dom::array array;
  EXPECT_EQ(el[field].get_array().get(array), simdjson::SUCCESS) << field;
  for (const element item : array) out.push_back(item.get_int64().value());
  return out;
}

std::vector<std::string> Strings(const element& el, const char* field) {
  std::vector<std::string> out;
  simdjson::dom::array array;
  EXPECT_EQ(el[field].get_array().get(array), simdjson::SUCCESS) << field;
  for (const element item : array) out.emplace_back(item.get_string().value());
  return out;
}

// A case's record value: valueText as given, else value minified, null (or absent): a tombstone.
std::optional<std::string> RecordValue(const element& c) {
  if (Has(c, "valueText")) return Str(c, "valueText");
  if (IsNull(c, "value")) return std::nullopt;
  return Minified(c, "value");
}

// ---------------------------------------------------------------------------------------------
// Commands.

class CommandVectorsTest : public ::testing::Test {
 protected:
  CommandVectorsTest()
      : file_("commands.json"),
        policy_(Strings(file_.root()["config"].value(), "allowedTopics"),
                Strings(file_.root()["config"].value(), "reservedTopics")) {
    const element config = file_.root()["config"].value();
    for (const int64_t minutes : Ints(config, "intervals")) rules_.intervals.push_back(static_cast<int32_t>(minutes));
    rules_.shard_count = static_cast<int32_t>(Int(config, "shardCount"));
    rules_.max_details_bytes = Int(config, "maxDetailsBytes");
    rules_.max_command_bytes = Int(config, "maxCommandBytes");
    rules_.topic_policy = &policy_;
    rules_.time_zones = &SystemTimeZones();
    rules_.one_shot.tick_ms = Int(config, "tickMs");
    rules_.one_shot.max_catchup_ms = Int(config, "maxCatchupMs");
    rules_.one_shot.fire_late = Str(config, "misfirePolicy") != "skip";
  }

  StatusOr<Command> Parse(const element& c) const {
    const element defaults = file_.root()["defaults"].value();
    RawCommand raw;
    raw.key = OptStr(c, "key");
    raw.value = RecordValue(c);
    raw.source.partition = static_cast<int32_t>(Int(defaults, "partition"));
    raw.source.offset = Int(defaults, "offset");
    raw.source.timestamp_ms = Has(c, "timestampMs") ? Int(c, "timestampMs") : Int(defaults, "timestampMs");
    if (Has(c, "headers")) {
      const element headers = c["headers"].value();
      raw.actor_header = OptStr(headers, "belfry-actor").value_or("");
      raw.reason_header = OptStr(headers, "belfry-reason").value_or("");
    }
    return ParseCommand(raw, rules_);
  }

  VectorFile file_;
  TopicPolicy policy_;
  CommandRules rules_;
};

TEST_F(CommandVectorsTest, ValidCommandsParseToTheExpectedCommand) {
  for (const element c : file_.Cases("valid")) {
    SCOPED_TRACE(Str(c, "name"));
    const StatusOr<Command> parsed = Parse(c);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    const Command& command = parsed.value();
    const element expect = c["expect"].value();
    EXPECT_EQ(CommandOpName(command.op), Str(expect, "op"));
    EXPECT_EQ(command.id, Str(expect, "id"));
    EXPECT_EQ(command.reason, Str(expect, "reason"));
    EXPECT_EQ(command.actor, Str(expect, "actor"));

    EXPECT_EQ(command.op == CommandOp::kUpsert, Has(expect, "job")) << "an upsert, and only an upsert, has a job";
    if (Has(expect, "job")) {
      StoredJob job;
      job.spec = command.spec;
      EXPECT_EQ(EncodeJobJson(job), Minified(expect, "job"));
    }

    EXPECT_EQ(command.op == CommandOp::kBackfill, Has(expect, "backfill"));
    if (Has(expect, "backfill")) {
      const element backfill = expect["backfill"].value();
      EXPECT_EQ(FormatIsoTime(command.backfill.from_ms), Str(backfill, "from"));
      EXPECT_EQ(FormatIsoTime(command.backfill.to_ms), Str(backfill, "to"));
      EXPECT_EQ(command.backfill.rate_per_minute, Int(backfill, "ratePerMinute"));
      EXPECT_EQ(command.backfill.dry_run, Bool(backfill, "dryRun"));
    }

    EXPECT_EQ(command.selector.has_value(), Has(expect, "selector"));
    if (command.selector && Has(expect, "selector")) {
      EXPECT_EQ(EncodeBulkSelector(*command.selector), Minified(expect, "selector"));
      EXPECT_EQ(command.dry_run, Bool(expect, "dryRun"));
    }
  }
}

TEST_F(CommandVectorsTest, InvalidCommandsAreRejectedWithTheExpectedReason) {
  for (const element c : file_.Cases("invalid")) {
    SCOPED_TRACE(Str(c, "name"));
    const StatusOr<Command> parsed = Parse(c);
    ASSERT_FALSE(parsed.ok()) << "accepted";
    EXPECT_EQ(parsed.status().code(), Status::Code::kInvalid);
    EXPECT_EQ(parsed.status().reason(), Str(c, "reason")) << parsed.status().ToString();
  }
}

// The outcome of a rejected command: op "unknown", the error "<reason>: <message>", under the
// Kafka key (no record when the key cannot be an id).
TEST_F(CommandVectorsTest, InvalidCommandsHaveARejectedOutcome) {
  for (const element c : file_.Cases("invalid")) {
    SCOPED_TRACE(Str(c, "name"));
    RawCommand raw;
    raw.key = OptStr(c, "key");
    raw.value = RecordValue(c);
    raw.source = SourcePosition{3, 100, Int(file_.root()["defaults"].value(), "timestampMs")};
    if (Has(c, "headers")) raw.actor_header = OptStr(c["headers"].value(), "belfry-actor").value_or("");
    const PreparedCommandBatch prepared = PrepareCommandBatch({raw}, rules_);
    ASSERT_EQ(prepared.outcomes.size(), 1u);
    const CommandOutcome& o = prepared.outcomes[0];
    EXPECT_FALSE(o.applied);
    EXPECT_EQ(o.op, "unknown");
    EXPECT_EQ(o.error.rfind(Str(c, "reason") + ": ", 0), 0u) << o.error;
    EXPECT_EQ(o.id.empty() || (raw.key && o.id == *raw.key), true) << o.id;
    EXPECT_EQ(prepared.rejections.size(), 1u);
  }
}

// ---------------------------------------------------------------------------------------------
// Triggers.

TEST(TriggerVectorsTest, JobAndSlotEncodeToTheExpectedRecord) {
  const VectorFile file("triggers.json");
  const element config = file.root()["config"].value();
  const auto shard_count = static_cast<int32_t>(Int(config, "shardCount"));
  const int64_t tick_ms = Int(config, "tickMs");
  for (const element c : file.Cases("cases")) {
    SCOPED_TRACE(Str(c, "name"));
    const element job = c["job"].value();
    const element expect = c["expect"].value();
    const std::string id = Str(job, "id");
    const int32_t shard = ShardForId(id, shard_count);
    EXPECT_EQ(shard, Int(expect, "shard"));
    const EpochMs scheduled_for =
        Has(c, "minute") ? SlotMs(Int(c, "minute"), shard, tick_ms) : Int(c, "scheduledForMs");
    EXPECT_EQ(scheduled_for, Int(expect, "scheduledForMs"));

    // As ShardFirer builds the view of a due job: the key defaults to the id.
    const std::string key = OptStr(job, "key").value_or("");
    const std::string details = Minified(job, "jobDetails");
    const std::string topic = Str(job, "topic");
    const std::string manual = Str(c, "manual");
    TriggerView t;
    t.job_id = id;
    t.topic = topic;
    t.key = key.empty() ? t.job_id : key;
    t.details_json = details;
    t.interval_minutes = static_cast<int32_t>(Int(job, "intervalMinutes"));
    t.scheduled_for_ms = scheduled_for;
    t.attempt = static_cast<int32_t>(Int(c, "attempt"));
    t.manual = manual;

    std::string value;
    EncodeTriggerValue(t, &value);
    EXPECT_EQ(value, Str(expect, "value"));
    EXPECT_EQ(t.topic, Str(expect, "topic"));
    EXPECT_EQ(t.key, Str(expect, "key"));

    // The headers KafkaTriggerSink adds, by their value functions.
    std::map<std::string, std::string> headers = {{"belfry-job-id", std::string(t.job_id)},
                                                  {"belfry-scheduled-for", ScheduledForHeader(t.scheduled_for_ms)}};
    if (t.attempt > 0) headers["belfry-attempt"] = AttemptHeader(t.attempt);
    if (!t.manual.empty()) headers["belfry-manual"] = std::string(t.manual);
    std::map<std::string, std::string> expected_headers;
    simdjson::dom::object expected_object;
    ASSERT_EQ(expect["headers"].get_object().get(expected_object), simdjson::SUCCESS);
    for (const auto field : expected_object) {
      expected_headers[std::string(field.key)] = std::string(field.value.get_string().value());
    }
    EXPECT_EQ(headers, expected_headers);
  }
}

// ---------------------------------------------------------------------------------------------
// Execution reports.

class ReportVectorsTest : public ::testing::Test {
 protected:
  ReportVectorsTest() : file_("execution-reports.json") {
    const element config = file_.root()["config"].value();
    rules_.max_value_bytes = Int(config, "maxValueBytes");
    rules_.max_error_bytes = Int(config, "maxErrorBytes");
  }

  StatusOr<ExecutionReport> Parse(const element& c) const {
    RawExecution raw;
    raw.key = OptStr(c, "key");
    raw.value = RecordValue(c);
    raw.source = SourcePosition{0, 1, 1'795'766'400'000};
    return ParseExecutionReport(raw, rules_);
  }

  VectorFile file_;
  ExecutionRules rules_;
};

TEST_F(ReportVectorsTest, ValidReportsParseToTheExpectedReport) {
  for (const element c : file_.Cases("valid")) {
    SCOPED_TRACE(Str(c, "name"));
    const StatusOr<ExecutionReport> parsed = Parse(c);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    const ExecutionReport& r = parsed.value();
    const element expect = c["expect"].value();
    EXPECT_EQ(r.job_id, Str(expect, "jobId"));
    EXPECT_EQ(r.scheduled_for_ms, Int(expect, "scheduledForMs"));
    EXPECT_EQ(ExecutionStatusName(r.status), Str(expect, "status"));
    EXPECT_EQ(r.error, Str(expect, "error"));
    EXPECT_EQ(r.started_at, OptInt(expect, "startedAtMs"));
    EXPECT_EQ(r.finished_at, OptInt(expect, "finishedAtMs"));
    EXPECT_EQ(r.worker, Str(expect, "worker"));
    EXPECT_EQ(r.attempt, Int(expect, "attempt"));
  }
}

TEST_F(ReportVectorsTest, InvalidReportsAreRejectedWithTheExpectedReason) {
  for (const element c : file_.Cases("invalid")) {
    SCOPED_TRACE(Str(c, "name"));
    const StatusOr<ExecutionReport> parsed = Parse(c);
    ASSERT_FALSE(parsed.ok()) << "accepted";
    EXPECT_EQ(parsed.status().reason(), Str(c, "reason")) << parsed.status().ToString();
  }
}

// ---------------------------------------------------------------------------------------------
// Command outcomes and change events.

TEST(OutcomeVectorsTest, OutcomesEncodeToTheExpectedValue) {
  const VectorFile file("command-outcomes.json");
  for (const element c : file.Cases("cases")) {
    SCOPED_TRACE(Str(c, "name"));
    const element in = c["outcome"].value();
    CommandOutcome o;
    o.id = Str(in, "id");
    o.op = Str(in, "op");
    o.applied = Str(in, "status") == "applied";
    o.error = OptStr(in, "error").value_or("");
    o.partition = static_cast<int32_t>(Int(in, "partition"));
    o.offset = Int(in, "offset");
    if (Has(in, "slots")) o.slots = Int(in, "slots");
    if (Has(in, "covered")) o.covered = Int(in, "covered");
    if (Has(in, "dryRun")) o.dry_run = Bool(in, "dryRun");
    if (Has(in, "selector")) {
      o.selector_json = Minified(in, "selector");
      o.matched = Int(in, "matched");
      o.changed = Int(in, "changed");
    }
    EXPECT_EQ(EncodeCommandOutcome(o), Str(c, "value"));
  }
}

TEST(ChangeEventVectorsTest, ChangesEncodeToTheExpectedValue) {
  const VectorFile file("change-events.json");
  for (const element c : file.Cases("cases")) {
    SCOPED_TRACE(Str(c, "name"));
    const element in = c["change"].value();
    JobChange change;
    change.change_id = Int(in, "changeId");
    change.job_id = Str(in, "jobId");
    change.op = Str(in, "op");
    change.bulk_id = OptStr(in, "bulkId").value_or("");
    change.actor = OptStr(in, "actor").value_or("");
    change.reason = OptStr(in, "reason").value_or("");
    const element source = in["source"].value();
    change.source = SourcePosition{static_cast<int32_t>(Int(source, "partition")), Int(source, "offset"),
                                   Int(source, "timestampMs")};
    change.changed_at = Int(in, "changedAtMs");
    if (!IsNull(in, "before")) change.before_json = Minified(in, "before");
    if (!IsNull(in, "after")) change.after_json = Minified(in, "after");
    if (!IsNull(in, "detail")) change.detail_json = Minified(in, "detail");
    EXPECT_EQ(EncodeJobChangeJson(change), Str(c, "value"));
  }
}

}  // namespace
}  // namespace belfry
