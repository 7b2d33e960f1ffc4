// ScheduleHistory: how `verify --churn-rate` judges a slot of a job that changed during the
// window. Plain values and pure functions; the rule is stated in docs/loadtest.md ("Churn").
//
// A job's history is the schedule it had when the window opened (version 0) followed by one
// version per command the harness sent for it, in the order sent. belfry applies a job's
// commands in that order (they share the job id as Kafka key, hence a partition), so the
// sequence is certain; only the instant C_i at which version i became visible to the tick query
// is uncertain. The harness knows sent_ms <= C_i <= applied_ms, where applied_ms is when it
// received the command's `applied` outcome (belfry publishes outcomes only after the batch's
// transaction committed).
//
// The tick query of a shard-minute starts at its slot time T, or later by at most `margin_ms`
// (and, with several hosts, at most `margin_ms` early through clock skew). So version i can be
// the one a slot T was fired with iff
//     (i == 0 or sent_ms[i] - margin_ms <= T)  and  (i is the last or applied_ms[i+1] + margin_ms >= T),
// and, for a trigger that did arrive, also sent_ms[i] < its receive time (belfry cannot have
// read a command that was not yet sent). A slot is
//   - kRequired  when every possible version is due at it (it must arrive, once);
//   - kAllowed   when some but not all are (it may arrive, at most once);
//   - kForbidden when none is (an arrival is unexpected).
// A job keeps its shard for life, so old and new schedules share the slot of a minute: "both"
// would be a duplicate of one (job, slot), and a duplicate is never accepted.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "belfry/clock.h"

namespace belfry::loadtest {

inline constexpr EpochMs kBeforeWindowMs = std::numeric_limits<EpochMs>::min();
inline constexpr EpochMs kNotAppliedYetMs = std::numeric_limits<EpochMs>::max();

// An interval job as the tick query sees it. Churn never gives a job dates or a cron
// expression, and jobs that have them are never churned.
struct IntervalSchedule {
  bool exists = false;  // false: not created yet, or deleted
  bool paused = false;
  int32_t interval_minutes = 1;
  int32_t offset_minutes = 0;

  // belfry's due rule (IsDueAtSlot) for a job without dates: exists, not paused and
  // minute mod interval = offset.
  bool DueIn(int64_t minute, EpochMs slot_ms) const;
  bool operator==(const IntervalSchedule&) const = default;
};

enum class ChurnOp { kCreate, kUpdateOffset, kUpdateInterval, kPause, kResume, kDelete };

// The schedule after belfry applies `op` to a job whose schedule was `before`, by belfry's
// command rules (README "Rules worth knowing"): an upsert (create, update) replaces interval
// and offset and keeps the paused flag of an existing job (a new job is not paused); pause and
// resume of a missing job change nothing; delete removes it. `interval`/`offset` are the
// upsert's; unused otherwise.
IntervalSchedule ApplyChurnOp(const IntervalSchedule& before, ChurnOp op, int32_t interval, int32_t offset);

struct ScheduleVersion {
  IntervalSchedule schedule;
  EpochMs sent_ms = kBeforeWindowMs;     // kBeforeWindowMs for version 0
  EpochMs applied_ms = kBeforeWindowMs;  // outcome received; kNotAppliedYetMs while unknown
};

enum class SlotExpectation { kRequired, kAllowed, kForbidden };

// The rule above for the slot `slot_ms` of `minute` (the job's shard's slot). Versions sent at
// or after `received_before_ms` are ignored (pass the trigger's receive time when judging an
// arrival, kNotAppliedYetMs when judging a slot nothing arrived for).
// REQUIRES: !history.empty(); history[0].sent_ms == kBeforeWindowMs.
SlotExpectation ExpectSlot(std::span<const ScheduleVersion> history, int64_t minute, EpochMs slot_ms,
                           int64_t margin_ms, EpochMs received_before_ms = kNotAppliedYetMs);

}  // namespace belfry::loadtest
