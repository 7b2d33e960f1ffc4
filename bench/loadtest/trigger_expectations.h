// TriggerExpectations: the (job, slot) pairs belfry must fire inside a window of slot times,
// worked out from the jobs table by design.md's rule (slot(M, s) = M*60 s + s*tick; due iff
// M mod interval = offset, start_at <= slot < end_at, not paused), and which of them arrived.
//
// A job with cron_expr set is judged by the calendar rule instead (core/calendar_schedule.h:
// due in M iff NextCalendarFires/CronFiresAt say it fires at M in its zone, with the same slot,
// start/end and paused rules), whether belfry stored it with cron_slots or as a fixed interval,
// so the interval plan is checked against the calendar rule end to end. A cron job whose zone
// this process does not know, or whose text no longer parses, is counted and never due.
//
// Memory is bounded by the job count, not the trigger count: ids are interned into one arena
// with an open-addressing index (about 40 bytes per job in all), and arrivals are one bit per
// (job, minute of the window). Cron expression texts and zones are interned (each text parsed
// once); a cron job adds 12 bytes of indices, and its due minutes in the window one more bit per
// (cron job, minute).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "belfry/clock.h"
#include "belfry/shard_layout.h"
#include "core/cron_expression.h"
#include "loadtest/pg_connection.h"
#include "tzdb/system_time_zone_database.h"

namespace date {
class time_zone;
}

namespace belfry::loadtest {

class TriggerExpectations final {
 public:
  enum class Verdict {
    kExpected,       // first arrival of an expected (job, slot)
    kDuplicate,      // a repeat of one already seen
    kOutsideWindow,  // scheduledFor outside the window: not judged
    kUnknownJob,     // no such job in the table (as loaded)
    kNotDue,         // the job exists but is not due at that slot (or the slot is not its shard's)
    kManual,         // a trigger or backfill a command asked for (belfry-manual): counted, not judged
  };

  struct MissingTrigger {
    std::string job_id;
    EpochMs slot_ms = 0;
  };

  // Reads shard_count from belfry_meta (120 if absent) and every job whose topic starts with
  // `topic_prefix`, streamed with COPY. Throws std::runtime_error.
  void Load(PgConnection& conn, const std::string& topic_prefix);

  // Fixes the window of slot times [first_ms, last_ms], works out every cron job's fires in it
  // (each distinct expression and zone once), counts the expected pairs and clears the
  // arrivals. REQUIRES: Load().
  void SetWindow(EpochMs first_ms, EpochMs last_ms);

  // Judges one arrival. REQUIRES: SetWindow().
  Verdict Record(std::string_view job_id, EpochMs scheduled_for_ms);

  int64_t expected() const { return expected_; }
  int64_t arrived() const { return arrived_; }  // distinct expected pairs seen
  // Counts the expected pairs not seen; lists up to `limit` of them in `examples`.
  int64_t CountMissing(std::vector<MissingTrigger>* examples, size_t limit) const;
  // Calls fn(job_id, slot_ms) for every expected pair not seen.
  void ForEachMissing(const std::function<void(std::string_view, EpochMs)>& fn) const;

  // For `verify --churn-rate` (ChurnExpectations), which takes over the jobs it changes.
  struct IntervalJobView {
    int32_t shard = 0;
    int32_t interval_minutes = 1;
    int32_t offset_minutes = 0;
    bool paused = false;
  };
  // The loaded job `id` if it is an interval job without dates and still judged here.
  std::optional<IntervalJobView> IntervalJobOf(std::string_view id) const;
  // Calls fn(id, paused) for every job IntervalJobOf accepts.
  void ForEachIntervalJob(const std::function<void(std::string_view, bool)>& fn) const;
  // Stops judging `id` here: its due pairs leave expected(), its arrivals leave arrived(), and
  // bit k of *seen_minutes is set iff its slot of minute first_minute() + k arrived. From then
  // on Record() returns kUnknownJob for it and the missing count skips it.
  // REQUIRES: SetWindow(); IntervalJobOf(id).
  void Release(std::string_view id, std::vector<uint64_t>* seen_minutes);
  // The window as SetWindow() fixed it: slots [first_ms(), last_ms()], kept per minute from
  // first_minute() for window_minutes() minutes.
  EpochMs first_ms() const { return first_ms_; }
  EpochMs last_ms() const { return last_ms_; }
  int64_t first_minute() const { return first_minute_; }
  int64_t window_minutes() const { return minutes_; }

  size_t job_count() const { return jobs_.size(); }
  int64_t paused_jobs() const { return paused_jobs_; }
  int32_t shard_count() const { return shard_count_; }
  // Jobs with cron_expr set, of which those whose zone this process's tz database does not know
  // and those whose text does not parse (both never due); distinct expression texts.
  int64_t cron_jobs() const { return static_cast<int64_t>(cron_.size()); }
  int64_t cron_unknown_zone_jobs() const { return cron_unknown_zone_jobs_; }
  int64_t cron_invalid_jobs() const { return cron_invalid_jobs_; }
  size_t cron_expressions() const { return expressions_.size(); }
  // The newest firing layout's tick; a minute's own is in layout() (docs/resharding.md).
  int64_t tick_ms() const { return tick_ms_; }
  // The database's shard layout record (a stable layout of shard_count when it has none): the
  // firing shard and tick of each minute while a reshard is under way.
  const ShardLayout& layout() const { return layout_; }
  // The slot in `minute` of a job whose rows are stored in `stored_shard`, by that minute's layout.
  EpochMs SlotOf(int64_t minute, int32_t stored_shard) const;
  // Distinct topics of the loaded jobs, sorted.
  const std::vector<std::string>& topics() const { return topics_; }
  // The number of expected triggers per minute over the window.
  double expected_per_minute() const;

 private:
  struct JobInfo {
    int16_t interval = 1;  // unused for cron jobs
    int16_t offset = 0;
    int16_t shard = 0;
    uint8_t paused = 0;
    uint8_t has_dates : 1 = 0;
    uint8_t cron : 1 = 0;  // judged by the calendar rule: its CronRef is in cron_
    uint8_t released : 1 = 0;  // judged elsewhere since Release()
  };
  // A cron job's schedule, as indices into expressions_ and zones_.
  struct CronRef {
    uint32_t job = 0;
    uint32_t expression = 0;
    uint16_t zone = 0;
  };
  struct Dates {
    std::optional<EpochMs> start_at;
    std::optional<EpochMs> end_at;
  };

  // Index of `id`, or -1.
  int64_t Find(std::string_view id) const;
  void Intern(std::string_view id);
  std::string_view IdOf(size_t index) const {
    return std::string_view(arena_).substr(id_begin_[index], id_begin_[index + 1] - id_begin_[index]);
  }
  // Dates of job `index` (none unless has_dates).
  void DatesOf(size_t index, std::optional<EpochMs>* start_at, std::optional<EpochMs>* end_at) const;
  // The interval rule. REQUIRES: !jobs_[index].cron.
  bool DueAt(size_t index, int64_t minute, EpochMs slot_ms) const;
  // Calls fn(minute, slot_ms) for every window slot at which interval job `index` is due.
  template <typename Fn>
  void ForEachDueSlot(size_t index, Fn fn) const;
  // The same for the cron job cron_[position], from cron_due_.
  template <typename Fn>
  void ForEachCronDueSlot(size_t position, Fn fn) const;
  // Position in cron_ of cron job `index`. REQUIRES: jobs_[index].cron.
  size_t CronPosition(size_t index) const;
  // Fills cron_due_ for the window.
  void ComputeCronDue();

  std::string arena_;
  std::vector<uint64_t> id_begin_{0};  // jobs_.size() + 1 entries
  std::vector<uint32_t> index_;        // open addressing: job index + 1, 0 = empty
  std::vector<JobInfo> jobs_;
  std::unordered_map<uint32_t, Dates> dates_;
  std::vector<CronRef> cron_;                               // ascending by job
  std::vector<std::optional<CronExpression>> expressions_;  // nullopt: does not parse
  std::vector<const TimeZone*> zones_;                      // nullptr: unknown zone
  int64_t cron_unknown_zone_jobs_ = 0;
  int64_t cron_invalid_jobs_ = 0;
  std::vector<std::string> topics_;
  int64_t paused_jobs_ = 0;
  int32_t shard_count_ = 120;
  ShardLayout layout_;
  int64_t tick_ms_ = 500;

  EpochMs first_ms_ = 0;
  EpochMs last_ms_ = -1;
  int64_t first_minute_ = 0;
  int64_t minutes_ = 0;
  std::vector<uint64_t> seen_;      // bit (job * minutes_ + minute - first_minute_)
  std::vector<uint64_t> cron_due_;  // bit (cron position * minutes_ + minute - first_minute_)
  int64_t expected_ = 0;
  int64_t arrived_ = 0;
};

}  // namespace belfry::loadtest
