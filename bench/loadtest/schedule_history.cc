#include "loadtest/schedule_history.h"

#include <optional>

#include "core/slot_math.h"

namespace belfry::loadtest {

bool IntervalSchedule::DueIn(int64_t minute, EpochMs slot_ms) const {
  return exists &&
         IsDueAtSlot(interval_minutes, offset_minutes, std::nullopt, std::nullopt, paused, minute, slot_ms);
}

IntervalSchedule ApplyChurnOp(const IntervalSchedule& before, ChurnOp op, int32_t interval, int32_t offset) {
  IntervalSchedule after = before;
  switch (op) {
    case ChurnOp::kCreate:
    case ChurnOp::kUpdateOffset:
    case ChurnOp::kUpdateInterval:
      after.paused = before.exists && before.paused;
      after.exists = true;
      after.interval_minutes = interval;
      after.offset_minutes = offset;
      break;
    case ChurnOp::kPause:
    case ChurnOp::kResume:
      if (before.exists) after.paused = op == ChurnOp::kPause;
      break;
    case ChurnOp::kDelete:
      after = IntervalSchedule{};
      break;
  }
  return after;
}

SlotExpectation ExpectSlot(std::span<const ScheduleVersion> history, int64_t minute, EpochMs slot_ms,
                           int64_t margin_ms, EpochMs received_before_ms) {
  bool any_due = false;
  bool all_due = true;
  for (size_t i = 0; i < history.size(); ++i) {
    const ScheduleVersion& v = history[i];
    if (i > 0 && (v.sent_ms >= received_before_ms || v.sent_ms - margin_ms > slot_ms))
      break;  // sent in order
    if (i + 1 < history.size()) {
      const EpochMs next_applied = history[i + 1].applied_ms;
      // Superseded for sure before the slot's query: next_applied + margin < slot.
      if (next_applied != kNotAppliedYetMs && next_applied < slot_ms - margin_ms) continue;
    }
    const bool due = v.schedule.DueIn(minute, slot_ms);
    any_due = any_due || due;
    all_due = all_due && due;
  }
  if (!any_due) return SlotExpectation::kForbidden;
  return all_due ? SlotExpectation::kRequired : SlotExpectation::kAllowed;
}

}  // namespace belfry::loadtest
