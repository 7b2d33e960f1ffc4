#include "loadtest/churn_expectations.h"

#include <stdexcept>

#include "core/shard_hash.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"

namespace belfry::loadtest {
namespace {

uint32_t JobOf(ChurnExpectations::VersionHandle h) { return static_cast<uint32_t>(h >> 32); }
uint32_t VersionOf(ChurnExpectations::VersionHandle h) { return static_cast<uint32_t>(h); }

}  // namespace

ChurnExpectations::ChurnExpectations(TriggerExpectations* base, int64_t margin_ms)
    : base_(base), margin_ms_(margin_ms) {}

IntervalSchedule ChurnExpectations::Latest(std::string_view id) const {
  const auto it = index_.find(std::string(id));
  if (it != index_.end()) return jobs_[it->second].history.back().schedule;
  IntervalSchedule s;
  if (const auto loaded = base_->IntervalJobOf(id)) {
    s.exists = true;
    s.paused = loaded->paused;
    s.interval_minutes = loaded->interval_minutes;
    s.offset_minutes = loaded->offset_minutes;
  }
  return s;
}

uint32_t ChurnExpectations::Track(std::string_view id) {
  const std::string key(id);
  const auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  TrackedJob job;
  job.id = key;
  ScheduleVersion first;
  first.schedule = Latest(id);
  if (const auto loaded = base_->IntervalJobOf(id)) {
    job.shard = loaded->shard;
    base_->Release(id, &job.seen);
  } else {
    job.shard = StoredShard(id, base_->layout());
    job.seen.assign((static_cast<size_t>(base_->window_minutes()) + 63) / 64, 0);
  }
  job.history.push_back(first);
  const uint32_t index = static_cast<uint32_t>(jobs_.size());
  jobs_.push_back(std::move(job));
  index_.emplace(key, index);
  return index;
}

ChurnExpectations::VersionHandle ChurnExpectations::AddCommand(std::string_view id, ChurnOp op,
                                                               int32_t interval, int32_t offset,
                                                               EpochMs sent_ms) {
  const uint32_t index = Track(id);
  TrackedJob& job = jobs_[index];
  ScheduleVersion v;
  v.schedule = ApplyChurnOp(job.history.back().schedule, op, interval, offset);
  v.sent_ms = sent_ms;
  v.applied_ms = kNotAppliedYetMs;
  job.history.push_back(v);
  ++versions_;
  ++pending_;
  return (uint64_t{index} << 32) | static_cast<uint32_t>(job.history.size() - 1);
}

void ChurnExpectations::SetApplied(VersionHandle handle, EpochMs received_ms) {
  ScheduleVersion& v = jobs_.at(JobOf(handle)).history.at(VersionOf(handle));
  if (v.applied_ms == kNotAppliedYetMs) --pending_;
  v.applied_ms = received_ms;
}

void ChurnExpectations::SetRejected(VersionHandle handle) {
  std::vector<ScheduleVersion>& history = jobs_.at(JobOf(handle)).history;
  ScheduleVersion& v = history.at(VersionOf(handle));
  if (v.applied_ms == kNotAppliedYetMs) --pending_;
  v.schedule = history.at(VersionOf(handle) - 1).schedule;
  v.applied_ms = v.sent_ms;
}

EpochMs ChurnExpectations::SentMs(VersionHandle handle) const {
  return jobs_.at(JobOf(handle)).history.at(VersionOf(handle)).sent_ms;
}

ChurnExpectations::Verdict ChurnExpectations::Record(std::string_view job_id, EpochMs scheduled_for_ms,
                                                     EpochMs received_ms) {
  const auto it = index_.find(std::string(job_id));
  if (it == index_.end()) return base_->Record(job_id, scheduled_for_ms);
  TrackedJob& job = jobs_[it->second];
  if (scheduled_for_ms < base_->first_ms() || scheduled_for_ms > base_->last_ms())
    return Verdict::kOutsideWindow;
  const int64_t minute = EpochMinuteOf(scheduled_for_ms);
  if (scheduled_for_ms != base_->SlotOf(minute, job.shard)) return Verdict::kNotDue;
  if (ExpectSlot(job.history, minute, scheduled_for_ms, margin_ms_, received_ms) ==
      SlotExpectation::kForbidden)
    return Verdict::kNotDue;
  const int64_t k = minute - base_->first_minute();
  if (SeenBit(job, k)) return Verdict::kDuplicate;
  job.seen[k / 64] |= uint64_t{1} << (k % 64);
  return Verdict::kExpected;
}

ChurnExpectations::Totals ChurnExpectations::Finish(
    const std::function<void(std::string_view, EpochMs)>& on_missing,
    const std::function<void(std::string_view, EpochMs)>& on_forbidden) const {
  Totals t;
  for (const TrackedJob& job : jobs_) {
    for (int64_t k = 0; k < base_->window_minutes(); ++k) {
      const int64_t minute = base_->first_minute() + k;
      const EpochMs slot = base_->SlotOf(minute, job.shard);
      if (slot < base_->first_ms() || slot > base_->last_ms()) continue;
      const bool seen = SeenBit(job, k);
      switch (ExpectSlot(job.history, minute, slot, margin_ms_)) {
        case SlotExpectation::kRequired:
          ++t.required;
          if (seen) {
            ++t.required_seen;
          } else {
            ++t.missing;
            on_missing(job.id, slot);
          }
          break;
        case SlotExpectation::kAllowed:
          ++(seen ? t.allowed_seen : t.allowed_absent);
          break;
        case SlotExpectation::kForbidden:
          if (seen) {
            ++t.forbidden_seen;
            on_forbidden(job.id, slot);
          }
          break;
      }
    }
  }
  return t;
}

}  // namespace belfry::loadtest
