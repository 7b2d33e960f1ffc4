// Value types for jobs as stored, and for the rows the tick query returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/clock.h"

namespace belfry {

// Where a command came from in the commands topic. Used for replay protection and for
// DLQ / outcome records.
struct SourcePosition {
  int32_t partition = -1;
  int64_t offset = -1;
  EpochMs timestamp_ms = 0;  // the Kafka message timestamp
};

// How long to wait before each retry of a failed execution: initial_ms before the first,
// multiplied by `multiplier` for each further one, never more than max_ms.
// See docs/executions.md, "Retries".
struct RetryBackoff {
  int64_t initial_ms = 60'000;
  double multiplier = 2.0;  // >= 1
  int64_t max_ms = 3'600'000;

  bool operator==(const RetryBackoff&) const = default;
};

// The cron_slots rows of a slot-planned calendar job: one per code (see
// src/core/calendar_schedule.h), all with the same hour and day masks.
struct CalendarSlots {
  std::vector<int32_t> codes;
  int32_t hour_mask = 0;   // bit h: hour h (0..23)
  int32_t dom_mask = 0;    // bit d: day-of-month d (1..31)
  int32_t month_mask = 0;  // bit m: month m (1..12)
  int32_t dow_mask = 0;    // bit w: weekday w (0 = Sunday)
  bool day_or = false;     // Vixie: a day matches if either day field does

  bool operator==(const CalendarSlots&) const = default;
};

// A calendar (cron) job's schedule. See docs/calendar-schedules.md.
struct CalendarSpec {
  std::string cron;       // the normalized expression (five fields)
  std::string time_zone;  // IANA name, as given ("UTC" by default)
  // True when the expression is a fixed UTC interval in this zone: the job is stored and fired
  // as an interval job (interval_minutes/offset_minutes of the JobSpec), with no slots.
  bool as_interval = false;
  CalendarSlots slots;  // !as_interval only

  bool operator==(const CalendarSpec&) const = default;
};

// The longest job id belfry accepts, in bytes (commands and execution reports alike).
constexpr size_t kMaxJobIdBytes = 255;

// A job's full definition, as an upsert carries it and as the jobs table stores it.
struct JobSpec {
  std::string id;
  std::string owner;  // may be empty
  int32_t interval_minutes = 0;
  int32_t offset_minutes = 0;  // 0 <= offset < interval
  // True when the offset came from an explicit offsetMinutes or from startDateTime. When false
  // the offset was derived from the message timestamp, and an update that keeps the interval
  // keeps the stored offset instead.
  bool offset_explicit = false;
  // True when the producer chose the offset: offsetMinutes, startDateTime, or a cron expression
  // stored as an interval. Stored as jobs.offset_pinned (migration 0009): a rebalance never moves
  // a pinned job. Unlike offset_explicit, the batch reducer never sets it for its own reasons.
  bool offset_pinned = false;
  int32_t shard = 0;
  std::string topic;
  std::string key;           // empty = use id as the trigger key
  std::string details_json;  // minified JSON object text, "{}" when absent
  // The command's labels, as a canonical object (core/job_labels.h); empty means {}.
  std::string labels_json;
  // The start the tick query applies (jobs.start_at): the command's startDateTime, or for a
  // limited job the later of that and fires_from_ms (core/fire_limit.h).
  std::optional<EpochMs> start_at;
  // The end the tick query applies (jobs.end_at): the command's endDateTime, or for a limited job
  // the earlier of that and the end after its last allowed fire (core/fire_limit.h).
  std::optional<EpochMs> end_at;
  int32_t priority = 0;  // higher first within one shard-minute

  // Limited runs (maxFires, migration 0012, docs/fire-limits.md). Unset: no limit, and the
  // requested dates equal start_at and end_at. Set: the job fires its slots from the first at or
  // after fires_from_ms (start_at), after fires_before fired before its last resume, and end_at
  // stops it after max_fires in all. requested_start_at and requested_end_at are the
  // startDateTime and endDateTime the command gave.
  std::optional<int32_t> max_fires;
  int32_t fires_before = 0;
  EpochMs fires_from_ms = 0;
  std::optional<EpochMs> requested_start_at;
  std::optional<EpochMs> requested_end_at;

  // One-shot jobs (executionInterval "ONCE" or runAt): interval_minutes and offset_minutes are 0
  // and run_at is set. See docs/executions.md, "One-shot jobs".
  std::optional<EpochMs> run_at;  // as given in the command
  int64_t run_minute = 0;         // the epoch minute whose tick of `shard` fires it
  EpochMs scheduled_for_ms = 0;   // the trigger's scheduledFor: slot(minute of run_at, shard)
  // When the shard has already fired run_minute by the time the store applies the command (the
  // consumer lagged), the store may move run_minute to the shard's next minute, but never past
  // this one. -1: never move it (a past runAt beyond the catch-up window, or misfire policy skip).
  int64_t late_limit_minute = -1;

  // Retries of failed executions (docs/executions.md, "Retries"). max_retries 0 = none.
  int32_t max_retries = 0;
  RetryBackoff retry_backoff;
  // Set only on the rows belfry itself stores for scheduled retries (never by a command): the
  // retried job and the retry's attempt number (>= 1).
  std::string retry_of;
  int32_t attempt = 0;

  // Calendar jobs: set for a cron schedule. Unless it is stored as an interval,
  // interval_minutes and offset_minutes are 0.
  std::optional<CalendarSpec> calendar;

  bool one_shot() const { return run_at.has_value(); }
  bool calendar_slots() const { return calendar.has_value() && !calendar->as_interval; }
};

// A stored job, as read back for the CLI and admin API.
struct StoredJob {
  JobSpec spec;
  bool paused = false;
  // While paused: the pause command's note (empty when it gave none) and when the job was paused.
  std::string pause_reason;
  std::string pause_actor;
  std::optional<EpochMs> paused_at;
  EpochMs created_at = 0;
  EpochMs updated_at = 0;
  SourcePosition source;
};

// One row of the tick query. The views are valid only during the callback that receives it.
struct DueJob {
  std::string_view id;
  std::string_view topic;
  std::string_view key;           // empty = use id
  std::string_view details_json;  // minified JSON object
  int32_t interval_minutes = 0;
  int64_t due_minute = 0;  // the epoch minute whose slot this trigger is for
  // scheduledFor of the trigger; 0 = the slot of due_minute. One-shots carry their own (the slot
  // of their runAt's minute), which differs when a past runAt fires at once.
  EpochMs scheduled_for_ms = 0;
};

}  // namespace belfry
