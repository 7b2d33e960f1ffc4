// libFuzzer target for ParseCommand. Input layout: the Kafka key, a '\n', then the value.
//   - no '\n' at all: a tombstone (null value) whose key is the whole input;
//   - an empty first line: a message without a key.
// Every accepted command must satisfy the invariants below; a violation traps.
#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/calendar_schedule.h"
#include "core/command_parser.h"
#include "core/cron_expression.h"
#include "core/derived_row_id.h"
#include "core/fire_limit.h"
#include "core/job_labels.h"
#include "core/interval_name.h"
#include "core/iso_time.h"
#include "core/manual_fire.h"
#include "core/shard_hash.h"
#include "core/topic_policy.h"
#include "fuzz_checks.h"
#include "tzdb/system_time_zone_database.h"

namespace {

using belfry::Command;
using belfry::CommandOp;
using belfry::CommandRules;
using belfry::RawCommand;
using belfry::StatusOr;
using belfry::fuzz::Check;
using belfry::fuzz::CheckRejection;
using belfry::fuzz::HasControlChar;
using belfry::fuzz::IsUtf8;

constexpr int64_t kMessageTimestampMs = 1'795'871'262'123;

const belfry::TopicPolicy& Policy() {
  static const belfry::TopicPolicy policy(
      {"tracking.*", "eta.*", "*.triggers", "t"},
      {"belfry.commands", "belfry.commands.dlq", "belfry.command-results"});
  return policy;
}

const CommandRules& Rules() {
  static const CommandRules rules = [] {
    CommandRules r;
    r.intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
    r.shard_count = 120;
    r.max_details_bytes = 64 * 1024;
    r.max_command_bytes = 256 * 1024;
    r.topic_policy = &Policy();
    r.time_zones = &belfry::SystemTimeZones();
    return r;
  }();
  return rules;
}

void CheckAccepted(const RawCommand& raw, const Command& command) {
  const CommandRules& rules = Rules();
  Check(!command.id.empty() && command.id.size() <= 255);
  Check(!HasControlChar(command.id));
  Check(IsUtf8(command.id));
  Check(raw.key.has_value() && *raw.key == command.id);
  Check(command.source.offset == raw.source.offset);
  if (!raw.value) Check(command.op == CommandOp::kDelete);
  Check(!belfry::ReservedIdMarker(command.id).has_value());
  if (command.op == CommandOp::kBackfill) {  // a past range of at most 366 days, a pace in 1..10000
    const belfry::BackfillRange& b = command.backfill;
    Check(b.from_ms < b.to_ms && b.to_ms <= raw.source.timestamp_ms);
    Check(b.to_ms - b.from_ms <= belfry::kMaxBackfillSpanMs);
    Check(b.rate_per_minute >= 1 && b.rate_per_minute <= belfry::kMaxBackfillRatePerMinute);
  }
  if (command.selector) {  // a bulk command (docs/bulk-operations.md): never every job
    Check(command.op == CommandOp::kPause || command.op == CommandOp::kResume || command.op == CommandOp::kDelete ||
          command.op == CommandOp::kTrigger);
    const belfry::BulkSelector& sel = *command.selector;
    Check(sel.owner.has_value() || !sel.labels_json.empty());
    if (sel.owner) Check(!sel.owner->empty() && sel.owner->size() <= 255 && !HasControlChar(*sel.owner));
    if (!sel.labels_json.empty()) {  // canonical, and not {}
      simdjson::dom::parser label_parser;
      simdjson::dom::element labels;
      std::string again;
      Check(label_parser.parse(sel.labels_json).get(labels) == simdjson::SUCCESS);
      Check(belfry::ParseLabels(labels, &again).ok() && again == sel.labels_json && again != "{}");
    }
    Check(command.reason.size() <= 1024 && command.actor.size() <= 255);
    return;
  }
  if (command.op != CommandOp::kUpsert) return;

  const belfry::JobSpec& spec = command.spec;
  Check(spec.id == command.id);
  if (spec.calendar_slots()) {  // a cron job found through cron_slots: no interval of its own
    Check(spec.interval_minutes == 0 && spec.offset_minutes == 0);
    Check(!spec.calendar->slots.codes.empty());
    for (int32_t code : spec.calendar->slots.codes) Check(code >= 0 && code < 120);
    Check(spec.calendar->slots.hour_mask != 0 && spec.calendar->slots.codes.size() <= 60);
    const belfry::StatusOr<belfry::CronExpression> again = belfry::ParseCronExpression(spec.calendar->cron);
    Check(again.ok() && again->normalized == spec.calendar->cron);
    Check(belfry::LocateTimeZone(belfry::SystemTimeZones(), spec.calendar->time_zone).ok());
  } else if (spec.one_shot()) {
    Check(spec.interval_minutes == 0 && spec.offset_minutes == 0);
  } else {
    Check(std::find(rules.intervals.begin(), rules.intervals.end(), spec.interval_minutes) !=
          rules.intervals.end());
    Check(spec.offset_minutes >= 0 && spec.offset_minutes < spec.interval_minutes);
  }
  Check(spec.shard >= 0 && spec.shard < rules.shard_count);
  Check(spec.shard == belfry::ShardForId(spec.id, rules.shard_count));
  Check(rules.topic_policy->Check(spec.topic).ok());
  Check(spec.key.size() <= 1024 && spec.key.find('\0') == std::string::npos);
  Check(spec.owner.size() <= 255 && !HasControlChar(spec.owner));
  Check(spec.priority >= -1'000'000 && spec.priority <= 1'000'000);
  // The dates as asked for; a limited job's window (start_at, end_at) lies within them and may be
  // empty (an end already past when the command was produced).
  if (spec.requested_start_at && spec.requested_end_at) Check(*spec.requested_end_at > *spec.requested_start_at);
  if (!spec.offset_explicit) Check(!spec.requested_start_at);
  if (spec.max_fires) {  // docs/fire-limits.md
    Check(*spec.max_fires >= 1 && *spec.max_fires <= belfry::kMaxFires && !spec.one_shot());
    Check(spec.fires_before == 0 && spec.fires_from_ms == raw.source.timestamp_ms);
    Check(spec.start_at && *spec.start_at >= spec.fires_from_ms);
    if (spec.requested_start_at) Check(*spec.start_at >= *spec.requested_start_at);
    if (spec.requested_end_at) Check(spec.end_at && *spec.end_at <= *spec.requested_end_at);
  } else {
    Check(spec.start_at == spec.requested_start_at && spec.end_at == spec.requested_end_at);
  }
  if (!spec.labels_json.empty()) {  // canonical: re-parses to itself
    simdjson::dom::parser label_parser;
    simdjson::dom::element labels;
    std::string again;
    Check(label_parser.parse(spec.labels_json).get(labels) == simdjson::SUCCESS);
    Check(belfry::ParseLabels(labels, &again).ok() && again == spec.labels_json);
  }

  // details_json is a minified object within the limit that re-parses, and minifies to itself.
  Check(static_cast<int64_t>(spec.details_json.size()) <= rules.max_details_bytes);
  Check(IsUtf8(spec.details_json));
  simdjson::dom::parser parser;
  simdjson::dom::element details;
  Check(parser.parse(spec.details_json).get(details) == simdjson::SUCCESS);
  Check(details.is_object());
  Check(simdjson::minify(details) == spec.details_json);
}

// Side properties of the helpers, on the same bytes.
void CheckHelpers(std::string_view data) {
  if (const auto ms = belfry::ParseIsoTime(data)) {
    // Format(Parse(x)) is canonical, and parses back to the same instant.
    const std::string formatted = belfry::FormatIsoTime(*ms);
    Check(belfry::ParseIsoTime(formatted) == ms);
  }
  if (const auto minutes = belfry::ParseExecutionInterval(data)) Check(*minutes > 0);
  if (belfry::IsValidKafkaTopicName(data)) Check(!data.empty() && data.size() <= 249);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  RawCommand raw;
  raw.source = belfry::SourcePosition{7, 4242, kMessageTimestampMs};
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) {
    raw.key = std::string(input);  // tombstone
  } else {
    if (newline > 0) raw.key = std::string(input.substr(0, newline));
    raw.value = std::string(input.substr(newline + 1));
  }

  const StatusOr<Command> result = belfry::ParseCommand(raw, Rules());
  if (result.ok()) {
    CheckAccepted(raw, result.value());
  } else {
    CheckRejection(result.status());
  }
  if (size <= 512) CheckHelpers(input);
  return 0;
}
