#include "core/command_parser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "core/bulk_selector.h"
#include "core/calendar_schedule.h"
#include "core/derived_row_id.h"
#include "core/fire_limit.h"
#include "core/interval_name.h"
#include "core/iso_time.h"
#include "core/job_labels.h"
#include "core/job_owner.h"
#include "core/json_object_fields.h"
#include "core/manual_fire.h"
#include "core/message_quote.h"
#include "core/one_shot_placement.h"
#include "core/retry_fields.h"
#include "core/retry_policy.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"

namespace belfry {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr size_t kMaxPauseReasonBytes = 1024;
constexpr size_t kMaxPauseActorBytes = 255;
constexpr size_t kMaxKeyBytes = 1024;
constexpr int64_t kMaxAbsPriority = 1'000'000;

// ---------------------------------------------------------------------------------------------
// Safe echoing of user input in messages.

std::string Quote(std::string_view text) { return QuoteForMessage(text, kMaxEchoBytes); }

Status Reject(std::string_view reason, std::string message) {
  return Status::Invalid(std::string(reason), std::move(message));
}

// ---------------------------------------------------------------------------------------------
// Fields.

enum Field : size_t {
  kOp,
  kId,
  kOwner,
  kStartDateTime,
  kEndDateTime,
  kExecutionInterval,
  kIntervalMinutes,
  kOffsetMinutes,
  kTopic,
  kKey,
  kJobDetails,
  kPriority,
  kRunAt,
  kMaxRetries,
  kRetryBackoff,
  kCron,
  kTimeZone,
  kReason,
  kActor,
  kFrom,
  kTo,
  kRatePerMinute,
  kDryRun,
  kMaxFires,
  kLabels,
  kSelector,
  kFieldCount,
};

constexpr std::array<std::string_view, kFieldCount> kFieldNames = {
    "op",
    "id",
    "owner",
    "startDateTime",
    "endDateTime",
    "executionInterval",
    "intervalMinutes",
    "offsetMinutes",
    "topic",
    "key",
    "jobDetails",
    "priority",
    "runAt",
    "maxRetries",
    "retryBackoff",
    "cron",
    "timeZone",
    "reason",
    "actor",
    "from",
    "to",
    "ratePerMinute",
    "dryRun",
    "maxFires",
    "labels",
    "selector",
};

static_assert(kFieldCount <= JsonObjectFields::kMaxFields);

// An integer-valued JSON number. Numbers with a fraction or exponent are not integers, even when
// their value is integral.
struct JsonInteger {
  enum class Kind { kOk, kNotNumber, kNotInteger, kOutOfRange };
  Kind kind = Kind::kNotNumber;
  int64_t value = 0;
};

JsonInteger ReadInteger(const element& el) {
  switch (el.type()) {
    case element_type::INT64: {
      int64_t v = 0;
      if (el.get_int64().get(v) != simdjson::SUCCESS) return {JsonInteger::Kind::kOutOfRange, 0};
      return {JsonInteger::Kind::kOk, v};
    }
    case element_type::UINT64:  // only used for values above INT64_MAX
      return {JsonInteger::Kind::kOutOfRange, 0};
    case element_type::DOUBLE:
      return {JsonInteger::Kind::kNotInteger, 0};
    default:
      return {JsonInteger::Kind::kNotNumber, 0};
  }
}

// The number as JSON text (short: numbers that simdjson accepts print in at most ~25 bytes).
std::string NumberText(const element& el) { return simdjson::minify(el); }

// ---------------------------------------------------------------------------------------------
// Individual rules.

// The id rules, shared by JSON ids and tombstone keys.
// A command's "reason" or "actor" (or its belfry-reason or belfry-actor header, named by `what`):
// at most `max_bytes`, without control characters (it is shown on one line by the CLI and stored
// as PostgreSQL text). The rejection's reason is invalid_<field>.
Status CheckNoteText(Field field, std::string_view what, std::string_view text, size_t max_bytes) {
  const std::string reason = fmt::format("invalid_{}", kFieldNames[field]);
  if (text.size() > max_bytes) {
    return Reject(reason, fmt::format("{} is {} bytes; the limit is {}", what, text.size(), max_bytes));
  }
  if (const auto at = FirstControlChar(text)) {
    return Reject(reason, fmt::format("{} {} contains control character 0x{:02x} at byte {}", what, Quote(text),
                                      static_cast<unsigned char>(text[*at]), *at));
  }
  if (const size_t at = FirstInvalidUtf8(text); at != std::string_view::npos) {
    return Reject(reason, fmt::format("{} {} is not valid UTF-8 (byte {})", what, Quote(text), at));
  }
  return Status::Ok();
}

// The JSON field `field` when present, else the header `header` when not empty.
Status ParseNoteField(const JsonObjectFields* fields, Field field, std::string_view header_name,
                      const std::string& header, size_t max_bytes, std::string* out) {
  std::optional<std::string_view> text;
  if (fields != nullptr) {
    if (Status s = fields->GetString(field, &text); !s.ok()) return s;
  }
  if (text) {
    if (Status s = CheckNoteText(field, kFieldNames[field], *text, max_bytes); !s.ok()) return s;
    *out = std::string(*text);
    return Status::Ok();
  }
  if (header.empty()) return Status::Ok();
  if (Status s = CheckNoteText(field, fmt::format("header {}", header_name), header, max_bytes); !s.ok()) return s;
  *out = header;
  return Status::Ok();
}

// Every command's note, "reason" and "actor" (a pause stores it on the job; the audit trail
// records it with every change). `fields` is null for a tombstone: the headers only.
Status ParseNote(const JsonObjectFields* fields, const RawCommand& raw, Command* command) {
  if (Status s = ParseNoteField(fields, kReason, "belfry-reason", raw.reason_header, kMaxPauseReasonBytes,
                                &command->reason);
      !s.ok()) {
    return s;
  }
  return ParseNoteField(fields, kActor, "belfry-actor", raw.actor_header, kMaxPauseActorBytes, &command->actor);
}

Status CheckId(std::string_view id) {
  if (id.empty()) return Reject("missing_id", "id is empty");
  if (id.size() > kMaxJobIdBytes) {
    return Reject("invalid_id", fmt::format("id is {} bytes; the limit is {}", id.size(), kMaxJobIdBytes));
  }
  if (const auto at = FirstControlChar(id)) {
    return Reject("invalid_id", fmt::format("id {} contains control character 0x{:02x} at byte {}", Quote(id),
                                            static_cast<unsigned char>(id[*at]), *at));
  }
  if (const size_t at = FirstInvalidUtf8(id); at != std::string_view::npos) {
    return Reject("invalid_id", fmt::format("id {} is not valid UTF-8 (byte {})", Quote(id), at));
  }
  if (const std::optional<std::string_view> marker = ReservedIdMarker(id)) {
    return Reject("invalid_id", fmt::format("id {} contains \"{}\", which belfry reserves for the ids of the "
                                            "rows it derives from a job (retries, manual triggers, backfills)",
                                            Quote(id), *marker));
  }
  return Status::Ok();
}

std::string IntervalList(const std::vector<int32_t>& intervals) {
  return fmt::format("{}", fmt::join(intervals, ","));
}

Status CheckConfigured(int32_t minutes, std::string_view given, const CommandRules& rules) {
  if (std::find(rules.intervals.begin(), rules.intervals.end(), minutes) != rules.intervals.end()) {
    return Status::Ok();
  }
  return Reject("unsupported_interval", fmt::format("{} is not one of the configured intervals {} (minutes)",
                                                    given, IntervalList(rules.intervals)));
}

// Sets *interval from executionInterval and/or intervalMinutes.
Status ParseInterval(const JsonObjectFields& fields, const CommandRules& rules, int32_t* interval) {
  std::optional<int32_t> from_name;
  std::string name_text;
  std::optional<std::string_view> name;
  if (Status s = fields.GetString(kExecutionInterval, &name); !s.ok()) return s;
  if (name) {
    from_name = ParseExecutionInterval(*name);
    if (!from_name) {
      return Reject("unsupported_interval",
                    fmt::format("executionInterval {} is not EVERY_MINUTE, EVERY_<N>_MINUTES, EVERY_HOUR or "
                                "EVERY_<N>_HOURS",
                                Quote(*name)));
    }
    name_text = fmt::format("executionInterval {} ({} minutes)", Quote(*name), *from_name);
  }

  std::optional<int32_t> from_minutes;
  if (const std::optional<element> el = fields.Get(kIntervalMinutes)) {
    const JsonInteger n = ReadInteger(*el);
    switch (n.kind) {
      case JsonInteger::Kind::kNotNumber:
        return fields.WrongType(kIntervalMinutes, "an integer number", *el);
      case JsonInteger::Kind::kNotInteger:
        return Reject("unsupported_interval",
                      fmt::format("intervalMinutes {} is not an integer", NumberText(*el)));
      case JsonInteger::Kind::kOutOfRange:
        return Reject("unsupported_interval",
                      fmt::format("intervalMinutes {} is out of range", NumberText(*el)));
      case JsonInteger::Kind::kOk:
        break;
    }
    if (n.value <= 0 || n.value > std::numeric_limits<int32_t>::max()) {
      return Reject("unsupported_interval",
                    fmt::format("intervalMinutes {} is not a positive number of minutes", n.value));
    }
    from_minutes = static_cast<int32_t>(n.value);
  }

  if (!from_name && !from_minutes) {
    return Reject("missing_field", "upsert needs an interval: executionInterval or intervalMinutes");
  }
  if (from_name && from_minutes && *from_name != *from_minutes) {
    return Reject("conflicting_interval",
                  fmt::format("{} disagrees with intervalMinutes {}", name_text, *from_minutes));
  }
  if (from_minutes) {
    if (Status s = CheckConfigured(*from_minutes, fmt::format("intervalMinutes {}", *from_minutes), rules);
        !s.ok()) {
      return s;
    }
  } else if (Status s = CheckConfigured(*from_name, name_text, rules); !s.ok()) {
    return s;
  }
  *interval = from_minutes ? *from_minutes : *from_name;
  return Status::Ok();
}

// Sets *offset to the explicit offsetMinutes, if given.
Status ParseExplicitOffset(const JsonObjectFields& fields, int32_t interval, std::optional<int32_t>* offset) {
  const std::optional<element> el = fields.Get(kOffsetMinutes);
  if (!el) return Status::Ok();
  const JsonInteger n = ReadInteger(*el);
  if (n.kind == JsonInteger::Kind::kNotNumber)
    return fields.WrongType(kOffsetMinutes, "an integer number", *el);
  if (n.kind != JsonInteger::Kind::kOk || n.value < 0 || n.value >= interval) {
    return Reject("offset_out_of_range",
                  fmt::format("offsetMinutes {} must be an integer in [0, {}) for interval {}",
                              NumberText(*el), interval, interval));
  }
  *offset = static_cast<int32_t>(n.value);
  return Status::Ok();
}

// An optional date field; an empty string means absent, like null (project44 producers send "").
Status ParseDate(const JsonObjectFields& fields, Field field, std::optional<EpochMs>* out) {
  std::optional<std::string_view> text;
  if (Status s = fields.GetString(field, &text); !s.ok()) return s;
  if (!text || text->empty()) return Status::Ok();
  *out = ParseIsoTime(*text);
  if (!*out) {
    return Reject("invalid_date",
                  fmt::format("{} {} is not a valid UTC time like 2026-11-22T13:00:00Z (YYYY-MM-DDTHH:MM:SS"
                              "[.fff][Z|+HH:MM|-HH:MM], years 1970-9999)",
                              kFieldNames[field], Quote(*text)));
  }
  return Status::Ok();
}

// True iff any string or object key inside `el` holds a NUL character. PostgreSQL text and jsonb
// cannot store U+0000, so such details would fail the whole batch at the database.
bool ContainsNul(const element& el) {
  switch (el.type()) {
    case element_type::STRING: {
      std::string_view s;
      return el.get_string().get(s) == simdjson::SUCCESS && s.find('\0') != std::string_view::npos;
    }
    case element_type::ARRAY: {
      simdjson::dom::array array;
      if (el.get_array().get(array) != simdjson::SUCCESS) return false;
      return std::any_of(array.begin(), array.end(), [](element child) { return ContainsNul(child); });
    }
    case element_type::OBJECT: {
      simdjson::dom::object object;
      if (el.get_object().get(object) != simdjson::SUCCESS) return false;
      for (const simdjson::dom::key_value_pair field : object) {
        if (field.key.find('\0') != std::string_view::npos || ContainsNul(field.value)) return true;
      }
      return false;
    }
    default:
      return false;
  }
}

Status ParseDetails(const JsonObjectFields& fields, const CommandRules& rules, std::string* details_json) {
  const std::optional<element> el = fields.Get(kJobDetails);
  if (!el) {
    *details_json = "{}";
    return Status::Ok();
  }
  if (!el->is_object()) {
    return Reject("invalid_details", fmt::format("jobDetails must be an object, not {}", JsonTypeName(*el)));
  }
  if (ContainsNul(*el)) {
    return Reject("invalid_details", "jobDetails contains a NUL character (\\u0000), which cannot be stored");
  }
  *details_json = simdjson::minify(*el);
  if (static_cast<int64_t>(details_json->size()) > rules.max_details_bytes) {
    return Reject("details_too_large", fmt::format("jobDetails is {} bytes minified; the limit is {}",
                                                   details_json->size(), rules.max_details_bytes));
  }
  return Status::Ok();
}

// A one-shot upsert: executionInterval "ONCE" (runAt, else startDateTime, is the time) or a runAt
// with no interval. Sets the one-shot fields of *spec; *is_one_shot = false for interval jobs.
Status ParseOneShot(const JsonObjectFields& fields, const RawCommand& raw, const CommandRules& rules,
                    JobSpec* spec, bool* is_one_shot) {
  *is_one_shot = false;
  std::optional<std::string_view> name;
  if (Status s = fields.GetString(kExecutionInterval, &name); !s.ok()) return s;
  const bool once = name && *name == "ONCE";
  std::optional<EpochMs> run_at;
  if (Status s = ParseDate(fields, kRunAt, &run_at); !s.ok()) return s;
  if (!once && !run_at) return Status::Ok();
  if (!once && (name || fields.Get(kIntervalMinutes))) {
    return Reject("invalid_one_shot",
                  "runAt is only for one-shot jobs; it cannot be combined with an interval");
  }
  if (once && fields.Get(kIntervalMinutes)) {
    return Reject("conflicting_interval", "executionInterval \"ONCE\" cannot have intervalMinutes");
  }
  if (fields.Get(kOffsetMinutes)) return Reject("invalid_one_shot", "a one-shot job has no offsetMinutes");
  if (fields.Get(kEndDateTime)) return Reject("invalid_one_shot", "a one-shot job has no endDateTime");
  std::optional<EpochMs> start_at;
  if (Status s = ParseDate(fields, kStartDateTime, &start_at); !s.ok()) return s;
  if (run_at && start_at) {
    return Reject("invalid_one_shot", "a one-shot job takes runAt or startDateTime, not both");
  }
  if (!run_at) run_at = start_at;
  if (!run_at) return Reject("missing_field", "executionInterval \"ONCE\" needs runAt (or startDateTime)");
  const OneShotPlacement placed = PlaceOneShot(*run_at, spec->shard, raw.source.timestamp_ms, rules.one_shot);
  spec->interval_minutes = 0;
  spec->offset_minutes = 0;
  spec->offset_explicit = true;
  spec->offset_pinned = true;
  spec->run_at = run_at;
  spec->run_minute = placed.run_minute;
  spec->scheduled_for_ms = placed.scheduled_for_ms;
  spec->late_limit_minute = placed.late_limit_minute;
  *is_one_shot = true;
  return Status::Ok();
}

Status ParseStartEnd(const JsonObjectFields& fields, JobSpec* spec) {
  if (Status s = ParseDate(fields, kStartDateTime, &spec->start_at); !s.ok()) return s;
  if (Status s = ParseDate(fields, kEndDateTime, &spec->end_at); !s.ok()) return s;
  if (spec->start_at && spec->end_at && *spec->end_at <= *spec->start_at) {
    return Reject("end_before_start",
                  fmt::format("endDateTime {} is not after startDateTime {}", FormatIsoTime(*spec->end_at),
                              FormatIsoTime(*spec->start_at)));
  }
  return Status::Ok();
}

// The interval, offset and start/end of an interval job.
Status ParseIntervalSchedule(const JsonObjectFields& fields, const RawCommand& raw, const CommandRules& rules,
                             JobSpec* spec) {
  if (Status s = ParseInterval(fields, rules, &spec->interval_minutes); !s.ok()) return s;
  std::optional<int32_t> explicit_offset;
  if (Status s = ParseExplicitOffset(fields, spec->interval_minutes, &explicit_offset); !s.ok()) return s;

  if (Status s = ParseStartEnd(fields, spec); !s.ok()) return s;

  // design.md, "Time model": explicit offset, else startDateTime's minute, else the message's.
  const int64_t interval = spec->interval_minutes;
  if (explicit_offset) {
    spec->offset_minutes = *explicit_offset;
    spec->offset_explicit = true;
    spec->offset_pinned = true;
  } else if (spec->start_at) {
    spec->offset_minutes = static_cast<int32_t>(PositiveMod(EpochMinuteOf(*spec->start_at), interval));
    spec->offset_explicit = true;
    spec->offset_pinned = true;
  } else {
    spec->offset_minutes =
        static_cast<int32_t>(PositiveMod(EpochMinuteOf(raw.source.timestamp_ms), interval));
    spec->offset_explicit = false;
    spec->offset_pinned = false;
  }
  return Status::Ok();
}

// A calendar job: `cron` with an optional `timeZone` (default UTC). Sets *is_calendar = false
// when there is no cron field. See docs/calendar-schedules.md.
Status ParseCalendar(const JsonObjectFields& fields, const RawCommand& raw, const CommandRules& rules,
                     JobSpec* spec, bool* is_calendar) {
  *is_calendar = false;
  std::optional<std::string_view> cron;
  if (Status s = fields.GetString(kCron, &cron); !s.ok()) return s;
  std::optional<std::string_view> zone;
  if (Status s = fields.GetString(kTimeZone, &zone); !s.ok()) return s;
  if (!cron) {
    if (zone) {
      return Reject("invalid_time_zone",
                    "timeZone applies only to cron jobs; this command has no cron field");
    }
    return Status::Ok();
  }
  for (const Field other : {kExecutionInterval, kIntervalMinutes, kOffsetMinutes, kRunAt}) {
    if (fields.Get(other)) {
      return Reject(
          "conflicting_schedule",
          fmt::format("a cron job has no {}: give either cron or an interval or runAt", kFieldNames[other]));
    }
  }
  if (Status s = ParseStartEnd(fields, spec); !s.ok()) return s;
  if (Status s = PlanCalendarJob(*rules.time_zones, *cron, zone.value_or("UTC"), raw.source.timestamp_ms,
                                 rules.intervals, spec);
      !s.ok()) {
    return s;
  }
  *is_calendar = true;
  return Status::Ok();
}

// An optional maxFires (1..kMaxFires; not for one-shots), and the end it puts on the job: the
// count starts at the command's timestamp (docs/fire-limits.md).
Status ParseMaxFires(const JsonObjectFields& fields, const RawCommand& raw, const CommandRules& rules,
                     JobSpec* spec) {
  spec->requested_start_at = spec->start_at;
  spec->requested_end_at = spec->end_at;
  const std::optional<element> el = fields.Get(kMaxFires);
  if (!el) return Status::Ok();
  const JsonInteger n = ReadInteger(*el);
  if (n.kind == JsonInteger::Kind::kNotNumber) return fields.WrongType(kMaxFires, "an integer number", *el);
  if (n.kind != JsonInteger::Kind::kOk || n.value < 1 || n.value > belfry::kMaxFires) {
    return Reject("invalid_max_fires",
                  fmt::format("maxFires {} must be an integer in [1, {}]", NumberText(*el), belfry::kMaxFires));
  }
  if (spec->one_shot()) return Reject("invalid_max_fires", "a one-shot job fires once; it takes no maxFires");
  spec->max_fires = static_cast<int32_t>(n.value);
  spec->fires_before = 0;
  spec->fires_from_ms = raw.source.timestamp_ms;
  ApplyFireLimit(*rules.time_zones, spec, rules.one_shot.tick_ms);
  return Status::Ok();
}

Status ParseUpsert(const JsonObjectFields& fields, const RawCommand& raw, const CommandRules& rules,
                   JobSpec* spec) {
  bool calendar = false;
  if (Status s = ParseCalendar(fields, raw, rules, spec, &calendar); !s.ok()) return s;
  if (!calendar) {
    bool one_shot = false;
    if (Status s = ParseOneShot(fields, raw, rules, spec, &one_shot); !s.ok()) return s;
    if (!one_shot) {
      if (Status s = ParseIntervalSchedule(fields, raw, rules, spec); !s.ok()) return s;
    }
  }
  if (Status s = ParseMaxFires(fields, raw, rules, spec); !s.ok()) return s;

  std::optional<std::string_view> topic;
  if (Status s = fields.GetString(kTopic, &topic); !s.ok()) return s;
  if (!topic) return Reject("missing_field", "upsert needs a topic");
  if (rules.topic_policy == nullptr) return Reject("forbidden_topic", "no output-topic policy is configured");
  if (Status s = rules.topic_policy->Check(*topic); !s.ok()) return s;
  spec->topic = std::string(*topic);

  std::optional<std::string_view> key;
  if (Status s = fields.GetString(kKey, &key); !s.ok()) return s;
  if (key) {
    if (key->size() > kMaxKeyBytes) {
      return Reject("invalid_key",
                    fmt::format("key is {} bytes; the limit is {}", key->size(), kMaxKeyBytes));
    }
    if (key->find('\0') != std::string_view::npos) {
      return Reject("invalid_key", fmt::format("key {} contains a NUL character", Quote(*key)));
    }
    spec->key = std::string(*key);
  }

  std::optional<std::string_view> owner;
  if (Status s = fields.GetString(kOwner, &owner); !s.ok()) return s;
  if (owner) {
    if (Status s = CheckOwner(*owner); !s.ok()) return s;
    spec->owner = std::string(*owner);
  }

  if (const std::optional<element> el = fields.Get(kPriority)) {
    const JsonInteger n = ReadInteger(*el);
    if (n.kind == JsonInteger::Kind::kNotNumber) return fields.WrongType(kPriority, "an integer number", *el);
    if (n.kind != JsonInteger::Kind::kOk || n.value < -kMaxAbsPriority || n.value > kMaxAbsPriority) {
      return Reject("invalid_priority", fmt::format("priority {} must be an integer in [{}, {}]",
                                                    NumberText(*el), -kMaxAbsPriority, kMaxAbsPriority));
    }
    spec->priority = static_cast<int32_t>(n.value);
  }

  if (const std::optional<element> el = fields.Get(kMaxRetries)) {
    if (Status s = ParseMaxRetries(*el, &spec->max_retries); !s.ok()) return s;
  }
  if (const std::optional<element> el = fields.Get(kRetryBackoff)) {
    if (Status s = ParseRetryBackoff(*el, &spec->retry_backoff); !s.ok()) return s;
  }
  if (const std::optional<element> el = fields.Get(kLabels)) {
    if (Status s = ParseLabels(*el, &spec->labels_json); !s.ok()) return s;
  }

  return ParseDetails(fields, rules, &spec->details_json);
}

// "dryRun": an optional boolean (a backfill's, a bulk command's).
Status ParseDryRun(const JsonObjectFields& fields, bool* dry_run) {
  if (const std::optional<element> el = fields.Get(kDryRun)) {
    if (el->get_bool().get(*dry_run) != simdjson::SUCCESS) return fields.WrongType(kDryRun, "a boolean", *el);
  }
  return Status::Ok();
}

// A backfill's range and pace: "from" and "to" (required dates, from < to, to not after the
// command's timestamp, at most kMaxBackfillSpanMs apart), "ratePerMinute" (1..10000, default 60)
// and "dryRun" (a boolean). See docs/manual-fires.md.
Status ParseBackfill(const JsonObjectFields& fields, const RawCommand& raw, BackfillRange* out) {
  std::optional<EpochMs> from;
  std::optional<EpochMs> to;
  if (Status s = ParseDate(fields, kFrom, &from); !s.ok()) return s;
  if (Status s = ParseDate(fields, kTo, &to); !s.ok()) return s;
  if (!from || !to) return Reject("missing_field", "backfill needs from and to");
  if (Status s = CheckBackfillRange(*from, *to, raw.source.timestamp_ms); !s.ok()) return s;
  out->from_ms = *from;
  out->to_ms = *to;
  out->rate_per_minute = kDefaultBackfillRatePerMinute;
  if (const std::optional<element> el = fields.Get(kRatePerMinute)) {
    const JsonInteger n = ReadInteger(*el);
    if (n.kind == JsonInteger::Kind::kNotNumber) return fields.WrongType(kRatePerMinute, "an integer number", *el);
    if (n.kind != JsonInteger::Kind::kOk || n.value < 1 || n.value > kMaxBackfillRatePerMinute) {
      return Reject("invalid_rate", fmt::format("ratePerMinute {} must be an integer in [1, {}]", NumberText(*el),
                                                kMaxBackfillRatePerMinute));
    }
    out->rate_per_minute = static_cast<int32_t>(n.value);
  }
  return ParseDryRun(fields, &out->dry_run);
}

// A bulk command (docs/bulk-operations.md): pause, resume, delete or trigger with a "selector";
// "dryRun" is optional. Its id names the operation.
Status ParseBulk(const JsonObjectFields& fields, const element& selector, Command* command) {
  if (command->op == CommandOp::kUpsert || command->op == CommandOp::kBackfill) {
    return Reject("invalid_selector", fmt::format("op {} takes no selector; bulk ops are pause, resume, delete, trigger",
                                                  CommandOpName(command->op)));
  }
  BulkSelector parsed;
  if (Status s = ParseBulkSelector(selector, &parsed); !s.ok()) return s;
  command->selector = std::move(parsed);
  return ParseDryRun(fields, &command->dry_run);
}

// ---------------------------------------------------------------------------------------------
// JSON parsing.

StatusOr<Command> ParseTombstone(const RawCommand& raw, const CommandRules& rules) {
  if (!raw.key) return Reject("missing_id", "tombstone (null value) without a Kafka key");
  if (Status s = CheckId(*raw.key); !s.ok()) {
    return Status::Invalid(s.reason(), "tombstone key: " + s.message());
  }
  Command command;
  command.op = CommandOp::kDelete;
  command.id = *raw.key;
  command.spec.id = command.id;
  command.spec.shard = ShardForId(command.id, rules.shard_count);
  command.source = raw.source;
  if (Status s = ParseNote(nullptr, raw, &command); !s.ok()) {
    return Status::Invalid(s.reason(), "tombstone: " + s.message());
  }
  return command;
}

}  // namespace

StatusOr<Command> ParseCommand(const RawCommand& raw, const CommandRules& rules) {
  if (!raw.value) return ParseTombstone(raw, rules);
  StatusOr<JsonObjectFields> parsed =
      JsonObjectFields::Parse(*raw.value, {"command", kFieldNames, rules.max_command_bytes});
  if (!parsed.ok()) return parsed.status();
  const JsonObjectFields& fields = parsed.value();

  Command command;
  command.source = raw.source;

  std::optional<std::string_view> op;
  if (Status s = fields.GetString(kOp, &op); !s.ok()) return s;
  const std::optional<CommandOp> named = CommandOpFromName(op.value_or("upsert"));
  if (!named) {
    return Reject("unknown_op", fmt::format("op {} is not one of upsert, delete, pause, resume, trigger, backfill",
                                            Quote(*op)));
  }
  command.op = *named;

  std::optional<std::string_view> id;
  if (Status s = fields.GetString(kId, &id); !s.ok()) return s;
  if (!id) return Reject("missing_id", "command has no id");
  if (Status s = CheckId(*id); !s.ok()) return s;
  if (!raw.key) {
    return Reject("key_mismatch",
                  fmt::format("message has no Kafka key; it must equal the id {}", Quote(*id)));
  }
  if (*raw.key != *id) {
    return Reject("key_mismatch", fmt::format("Kafka key {} differs from id {}; the key must be the job id",
                                              Quote(*raw.key), Quote(*id)));
  }
  command.id = std::string(*id);
  command.spec.id = command.id;
  command.spec.shard = ShardForId(command.id, rules.shard_count);
  if (Status s = ParseNote(&fields, raw, &command); !s.ok()) return s;

  if (const std::optional<element> el = fields.Get(kSelector)) {
    if (Status s = ParseBulk(fields, *el, &command); !s.ok()) return s;
  } else if (command.op == CommandOp::kUpsert) {
    if (Status s = ParseUpsert(fields, raw, rules, &command.spec); !s.ok()) return s;
  } else if (command.op == CommandOp::kBackfill) {
    if (Status s = ParseBackfill(fields, raw, &command.backfill); !s.ok()) return s;
  }
  return command;
}

}  // namespace belfry
