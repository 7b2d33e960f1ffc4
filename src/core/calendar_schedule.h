// Calendar schedules: a cron expression in an IANA time zone, mapped onto UTC minutes by the
// rules of docs/calendar-schedules.md. Plain functions over plain values; zones come from a
// TimeZoneDatabase the caller passes in (core/time_zone_database.h), so nothing here reads files.
//
// How the tick query finds cron jobs without a write per fire (docs/calendar-schedules.md,
// "How the tick finds calendar jobs"): each cron job has one `cron_slots` row per local minute of
// the hour it can match, keyed by (zone id, code), where code is
//   - the local minute of the hour, 0..59, for wall-time expressions, or
//   - 60 + the local minute of the hour, for real-time expressions (hour field "*"),
// with the job's hour and day fields as bit masks. For each UTC minute a node computes, per zone,
// the keys that minute stands for (AppendCalendarTerms): one real-time key, and one wall key (or
// none in a repeated hour, or all the skipped ones after a spring-forward gap), each with the bits
// of its local hour and date. The store probes cron_slots with those keys and tests the masks. No
// row depends on the zone's offset, so a DST transition rewrites nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/clock.h"
#include "belfry/job.h"
#include "belfry/status.h"
#include "core/cron_expression.h"
#include "core/cron_key_stride.h"
#include "core/time_zone.h"
#include "core/time_zone_database.h"

namespace belfry {

// Key layout of cron_slots.key: zone_id * kCronKeyStride (core/cron_key_stride.h) + code.
constexpr int32_t kCronRealTimeCodeBase = 60;

// A zone by name from `zones`. Unknown names give invalid_time_zone, with a message naming the
// zone and the database's version. The pointer stays valid for the life of `zones`.
StatusOr<const TimeZone*> LocateTimeZone(const TimeZoneDatabase& zones, std::string_view name);

// The UTC offset in whole minutes (floored) at `utc_minute`.
int32_t UtcOffsetMinutes(const TimeZone* zone, int64_t utc_minute);

// The cron_slots rows of a job: the codes it can fire at and its masks (bit h of hour_mask for
// hour h, bit d of dom_mask for day-of-month d, bit m of month_mask for month m, bit w of
// dow_mask for weekday w, 0 = Sunday; day_or = neither day field is a star, Vixie's OR rule).
CalendarSlots CalendarSlotsFor(const CronExpression& cron);

// One probe of cron_slots: a key and the bits of the local hour and date it stands for
// (1 << hour, 1 << day, 1 << month, 1 << weekday). `minute` is the UTC minute it belongs to
// (range queries).
struct CalendarTerm {
  int64_t key = 0;
  int32_t hour_bit = 0;
  int32_t dom_bit = 0;
  int32_t month_bit = 0;
  int32_t dow_bit = 0;
  int64_t minute = 0;
};

struct ZoneEntry {
  int32_t id = 0;
  const TimeZone* zone = nullptr;
};

// Appends the terms of UTC minute `utc_minute` for every zone (docs/calendar-schedules.md).
void AppendCalendarTerms(const std::vector<ZoneEntry>& zones, int64_t utc_minute,
                         std::vector<CalendarTerm>* out);

// True iff a job with this expression in this zone fires at `utc_minute` (start/end and paused
// not considered). The reference rule; the tick query's terms agree with it by construction and
// by test.
bool CronFiresAt(const CronExpression& cron, const TimeZone* zone, int64_t utc_minute);

// One upcoming fire, for previews.
struct CalendarFire {
  enum class Mark {
    kNone,
    kMovedFromGap,     // wall time: its matching local time(s) fell in a spring-forward gap
    kMergedInGap,      // wall time: several matching local times of a gap (and maybe this one) fire once
    kFirstOfRepeated,  // wall time: a local time that happens twice; fires at this first one only
    kRepeated,         // real time (hour "*"): the second occurrence of a repeated local time
  };
  int64_t utc_minute = 0;
  int64_t local_minute = 0;  // local wall time, as minutes since 1970-01-01T00:00 local
  int32_t utc_offset_minutes = 0;
  Mark mark = Mark::kNone;
};

// A fire's local wall time with its UTC offset, "2026-03-08T03:00:00-04:00".
std::string FormatLocalTime(int64_t local_minute, int32_t utc_offset_minutes);

// One upcoming trigger of a job of any kind, for previews: its slot, its wall time in the job's
// zone (UTC for jobs without one) and the DST rule that placed it, if any.
struct NextFire {
  EpochMs at = 0;
  std::string local;  // FormatLocalTime
  CalendarFire::Mark mark = CalendarFire::Mark::kNone;
};

// A job's next `n` fires strictly after `now`; none when paused. The one preview shared by the
// CLI and the admin API (`next`, `nextTriggerAt` and `nextFires` all come from it). A calendar
// job's zone comes from `zones`.
std::vector<NextFire> NextFires(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                int64_t tick_ms, EpochMs now, int n);

// The JSON array of `fires`, one object each: {"at": the slot in UTC, "local": the wall time,
// "dst": null or the CalendarMarkName}.
std::string EncodeNextFires(const std::vector<NextFire>& fires);

// "moved_from_gap", "merged_in_gap", "first_of_repeated", "repeated", or "" for kNone.
const char* CalendarMarkName(CalendarFire::Mark mark);

// The first `n` fire minutes strictly after `after_minute` and before `before_minute`
// (exclusive; a job's end), in order. Skips whole local days and hours that cannot match, so a
// yearly expression costs a few thousand steps per year, not half a million.
std::vector<CalendarFire> NextCalendarFires(const CronExpression& cron, const TimeZone* zone,
                                            int64_t after_minute, int n,
                                            int64_t before_minute = INT64_MAX / 2);

// When the expression in this zone is a fixed UTC interval from `now` on forever (every day
// matches, the local fire times are every p minutes with p one of `intervals`, and the zone has
// no UTC-offset change after `now` in its tz database): that interval and its offset,
// so the job can be stored and fired as an interval job.
struct IntervalEquivalent {
  int32_t interval_minutes = 0;
  int32_t offset_minutes = 0;
};
std::optional<IntervalEquivalent> CalendarAsInterval(const CronExpression& cron, const TimeZone* zone,
                                                     EpochMs now, const std::vector<int32_t>& intervals);

// Plans a calendar job: parses `cron_text` and finds `zone_name` in `zones` (invalid_cron /
// invalid_time_zone),
// rejects a schedule that cannot fire in [max(start, now), end) (cron_never_fires), and fills
// spec->calendar and, for an interval-equivalent one, spec->interval_minutes/offset_minutes.
Status PlanCalendarJob(const TimeZoneDatabase& zones, std::string_view cron_text, std::string_view zone_name,
                       EpochMs now, const std::vector<int32_t>& intervals, JobSpec* spec);

// The next `n` trigger times (slots: fire minute * 60000 + shard * tick_ms) of a calendar job
// strictly after `after_ms`, honouring start_at and end_at. Empty when the stored text no
// longer parses or the zone is unknown to `zones`.
std::vector<CalendarFire> NextCalendarJobFires(const TimeZoneDatabase& zones, const JobSpec& spec,
                                               int64_t tick_ms, EpochMs after_ms, int n);

}  // namespace belfry
