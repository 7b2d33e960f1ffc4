#include "core/calendar_schedule.h"

#include <date/date.h>
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/iso_time.h"
#include "core/json_writer.h"
#include "core/message_quote.h"
#include "core/slot_math.h"

namespace belfry {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// First whole minute at or after a transition instant. Transitions of every zone since 1972 are
// on whole minutes; the ceiling keeps older, odd ones (LMT) on the later side.
int64_t MinuteAtOrAfter(int64_t utc_seconds) { return FloorDiv(utc_seconds + 59, 60); }

// Beyond year 9999, the last instant belfry accepts: an offset period that ends later never ends
// (a zone's last period ends in year 32767 or so).
constexpr int64_t kFarMinute = 5'000'000'000;

int64_t ClampMinute(int64_t utc_seconds) {
  if (utc_seconds >= kFarMinute * 60) return kFarMinute;
  if (utc_seconds <= -kFarMinute * 60) return -kFarMinute;
  return MinuteAtOrAfter(utc_seconds);
}

OffsetPeriod PeriodAtMinute(const TimeZone* zone, int64_t utc_minute) {
  return zone->PeriodAt(utc_minute * 60);
}

// A UTC minute seen in a zone.
struct MinuteView {
  int64_t local = 0;       // wall time of this minute, minutes since 1970-01-01T00:00 local
  int64_t prev_local = 0;  // wall time of the minute before
  bool repeated = false;   // this wall time already happened (a fall-back repeat)
  // Wall times [first_of_repeat_from, regime_end - 1] (UTC minutes) happen again after the next
  // transition; kFarMinute when the next transition repeats nothing.
  int64_t repeats_later_from = kFarMinute;
  int64_t regime_end = kFarMinute;  // first UTC minute of the next offset
  int64_t regime_begin = -kFarMinute;  // first UTC minute of this offset
  int32_t offset = 0;
};

int32_t OffsetMinutes(const OffsetPeriod& period) {
  return static_cast<int32_t>(FloorDiv(period.offset_seconds, 60));
}

MinuteView Inspect(const TimeZone* zone, int64_t m) {
  const OffsetPeriod info = PeriodAtMinute(zone, m);
  MinuteView v;
  v.offset = OffsetMinutes(info);
  v.local = m + v.offset;
  v.prev_local = v.local - 1;
  v.regime_end = ClampMinute(info.end);
  const int64_t begin = ClampMinute(info.begin);
  v.regime_begin = begin;
  if (begin > -kFarMinute && m - begin < 2 * kMinutesPerDay) {
    const OffsetPeriod before = zone->PeriodAt(info.begin - 1);
    const int32_t before_offset = OffsetMinutes(before);
    if (m == begin) v.prev_local = m - 1 + before_offset;
    const int64_t back = static_cast<int64_t>(before_offset) - v.offset;
    if (back > 0 && m - begin < back) v.repeated = true;
  }
  if (v.regime_end < kFarMinute && v.regime_end - m < 2 * kMinutesPerDay) {
    const OffsetPeriod after = PeriodAtMinute(zone, v.regime_end);
    const int64_t back = static_cast<int64_t>(v.offset) - OffsetMinutes(after);
    if (back > 0) v.repeats_later_from = v.regime_end - back;
  }
  return v;
}

struct LocalFields {
  int minute_of_day = 0;
  unsigned month = 1;
  unsigned day = 1;
  unsigned weekday = 0;
};

LocalFields FieldsOf(int64_t local) {
  const int64_t day_number = FloorDiv(local, kMinutesPerDay);
  LocalFields f;
  f.minute_of_day = static_cast<int>(local - day_number * kMinutesPerDay);
  const date::sys_days day{date::days(day_number)};
  const date::year_month_day ymd(day);
  f.month = static_cast<unsigned>(ymd.month());
  f.day = static_cast<unsigned>(ymd.day());
  f.weekday = date::weekday(day).c_encoding();
  return f;
}

bool Matches(const CronExpression& cron, int64_t local) {
  const LocalFields f = FieldsOf(local);
  return cron.minutes[f.minute_of_day % 60] && cron.hours[f.minute_of_day / 60] &&
         CronDayMatches(cron, f.month, f.day, f.weekday);
}

int32_t Bit(unsigned n) { return static_cast<int32_t>(uint32_t{1} << n); }

CalendarTerm TermFor(int32_t zone_id, int32_t code, int64_t local, int64_t utc_minute) {
  const LocalFields f = FieldsOf(local);
  CalendarTerm t;
  t.key = zone_id * kCronKeyStride + code;
  t.hour_bit = Bit(static_cast<unsigned>(f.minute_of_day / 60));
  t.dom_bit = Bit(f.day);
  t.month_bit = Bit(f.month);
  t.dow_bit = Bit(f.weekday);
  t.minute = utc_minute;
  return t;
}

int32_t WallCode(int64_t local) { return static_cast<int32_t>(((local % 60) + 60) % 60); }
int32_t RealTimeCode(int64_t local) { return kCronRealTimeCodeBase + WallCode(local); }

// Whether the job fires at a minute already inspected, and with which mark.
std::optional<CalendarFire::Mark> FireAt(const CronExpression& cron, const MinuteView& v, int64_t m) {
  if (cron.hour_star) {
    if (!Matches(cron, v.local)) return std::nullopt;
    return v.repeated ? CalendarFire::Mark::kRepeated : CalendarFire::Mark::kNone;
  }
  if (v.local - v.prev_local > 1) {  // the first minute after a spring-forward gap
    int skipped = 0;
    for (int64_t l = v.prev_local + 1; l < v.local; ++l) skipped += Matches(cron, l) ? 1 : 0;
    const bool here = Matches(cron, v.local);
    if (skipped == 0) {
      if (!here) return std::nullopt;
      return CalendarFire::Mark::kNone;
    }
    return skipped + (here ? 1 : 0) > 1 ? CalendarFire::Mark::kMergedInGap
                                        : CalendarFire::Mark::kMovedFromGap;
  }
  if (v.repeated || !Matches(cron, v.local)) return std::nullopt;
  return m >= v.repeats_later_from ? CalendarFire::Mark::kFirstOfRepeated : CalendarFire::Mark::kNone;
}

bool EveryDayMatches(const CronExpression& cron) {
  const bool all_months = cron.months.count() == 12;
  const bool all_dom = cron.days_of_month.count() == 31;
  const bool all_dow = cron.days_of_week.count() == 7;
  const bool day_or = !cron.dom_star && !cron.dow_star;
  return all_months && (day_or ? (all_dom || all_dow) : (all_dom && all_dow));
}

Status Reject(std::string reason, std::string message) {
  return Status::Invalid(std::move(reason), std::move(message));
}

}  // namespace

StatusOr<const TimeZone*> LocateTimeZone(const TimeZoneDatabase& zones, std::string_view name) {
  if (name.empty() || name.size() > 64) {
    return Reject("invalid_time_zone",
                  fmt::format("timeZone {} is not an IANA zone name", QuoteForMessage(name, 100)));
  }
  if (const TimeZone* zone = zones.Find(name)) return zone;
  return Reject("invalid_time_zone",
                fmt::format("timeZone {} is not a zone of this host's tz database (tzdata {}); use an IANA "
                            "name like \"Europe/Berlin\" or \"UTC\"",
                            QuoteForMessage(name, 100), zones.Version()));
}

int32_t UtcOffsetMinutes(const TimeZone* zone, int64_t utc_minute) {
  return OffsetMinutes(PeriodAtMinute(zone, utc_minute));
}

CalendarSlots CalendarSlotsFor(const CronExpression& cron) {
  CalendarSlots s;
  for (int m = 0; m < 60; ++m) {
    if (cron.minutes[m]) s.codes.push_back((cron.hour_star ? kCronRealTimeCodeBase : 0) + m);
  }
  for (unsigned h = 0; h < 24; ++h) {
    if (cron.hours[h]) s.hour_mask |= Bit(h);
  }
  for (unsigned d = 1; d <= 31; ++d) {
    if (cron.days_of_month[d]) s.dom_mask |= Bit(d);
  }
  for (unsigned m = 1; m <= 12; ++m) {
    if (cron.months[m]) s.month_mask |= Bit(m);
  }
  for (unsigned w = 0; w < 7; ++w) {
    if (cron.days_of_week[w]) s.dow_mask |= Bit(w);
  }
  s.day_or = !cron.dom_star && !cron.dow_star;
  return s;
}

void AppendCalendarTerms(const std::vector<ZoneEntry>& zones, int64_t utc_minute,
                         std::vector<CalendarTerm>* out) {
  for (const ZoneEntry& z : zones) {
    const MinuteView v = Inspect(z.zone, utc_minute);
    out->push_back(TermFor(z.id, RealTimeCode(v.local), v.local, utc_minute));
    if (v.local - v.prev_local > 1) {
      for (int64_t l = v.prev_local + 1; l <= v.local; ++l)
        out->push_back(TermFor(z.id, WallCode(l), l, utc_minute));
    } else if (!v.repeated) {
      out->push_back(TermFor(z.id, WallCode(v.local), v.local, utc_minute));
    }
  }
}

bool CronFiresAt(const CronExpression& cron, const TimeZone* zone, int64_t utc_minute) {
  return FireAt(cron, Inspect(zone, utc_minute), utc_minute).has_value();
}

const char* CalendarMarkName(CalendarFire::Mark mark) {
  switch (mark) {
    case CalendarFire::Mark::kNone:
      return "";
    case CalendarFire::Mark::kMovedFromGap:
      return "moved_from_gap";
    case CalendarFire::Mark::kMergedInGap:
      return "merged_in_gap";
    case CalendarFire::Mark::kFirstOfRepeated:
      return "first_of_repeated";
    case CalendarFire::Mark::kRepeated:
      return "repeated";
  }
  return "";
}

// Inspect(zone, m) without a zone lookup, from the view of an earlier minute of the same offset,
// when m is at least two days from both of that offset's transitions: there Inspect finds no
// repeat and no gap, and the view is the offset alone. Otherwise nullopt.
std::optional<MinuteView> QuietView(const MinuteView& known, int64_t m) {
  constexpr int64_t kNear = 2 * kMinutesPerDay;  // Inspect's own bound
  if (m < known.regime_begin || m >= known.regime_end) return std::nullopt;
  if (known.regime_begin > -kFarMinute && m - known.regime_begin < kNear) return std::nullopt;
  if (known.regime_end < kFarMinute && known.regime_end - m < kNear) return std::nullopt;
  MinuteView v;
  v.offset = known.offset;
  v.local = m + v.offset;
  v.prev_local = v.local - 1;
  v.regime_end = known.regime_end;
  v.regime_begin = known.regime_begin;
  return v;
}

std::vector<CalendarFire> NextCalendarFires(const CronExpression& cron, const TimeZone* zone,
                                            int64_t after_minute, int n, int64_t before_minute) {
  std::vector<CalendarFire> out;
  if (n <= 0) return out;
  int64_t m = after_minute + 1;
  std::optional<MinuteView> known;  // the last view a zone lookup made
  while (static_cast<int>(out.size()) < n && m < before_minute) {
    std::optional<MinuteView> quiet = known ? QuietView(*known, m) : std::nullopt;
    if (!quiet) known = Inspect(zone, m);
    const MinuteView v = quiet ? *quiet : *known;
    if (const std::optional<CalendarFire::Mark> mark = FireAt(cron, v, m)) {
      out.push_back(CalendarFire{m, v.local, v.offset, *mark});
    }
    // The next minute that can match, by the local fields, without crossing a transition (the
    // first minute of each offset is always inspected: it may end a gap).
    int64_t next = m + 1;
    if (v.local - v.prev_local <= 1) {
      const LocalFields f = FieldsOf(v.local);
      const int minute = f.minute_of_day % 60;
      if (!CronDayMatches(cron, f.month, f.day, f.weekday)) {
        next = m + (kMinutesPerDay - f.minute_of_day);
      } else if (!cron.hours[f.minute_of_day / 60]) {
        int h = f.minute_of_day / 60 + 1;  // the next hour of the day that can match, else the next day
        while (h < 24 && !cron.hours[h]) ++h;
        next = m + (h * 60 - f.minute_of_day);
      } else {
        int k = minute + 1;
        while (k < 60 && !cron.minutes[k]) ++k;
        next = m + (k - minute);
      }
    }
    m = std::max(m + 1, std::min(next, v.regime_end));
  }
  return out;
}

std::optional<IntervalEquivalent> CalendarAsInterval(const CronExpression& cron, const TimeZone* zone,
                                                     EpochMs now, const std::vector<int32_t>& intervals) {
  if (!EveryDayMatches(cron)) return std::nullopt;
  const int64_t now_minute = EpochMinuteOf(now);
  const OffsetPeriod info = PeriodAtMinute(zone, now_minute);
  if (ClampMinute(info.end) < kFarMinute) return std::nullopt;  // an offset change is ahead
  if (info.offset_seconds % 60 != 0) return std::nullopt;
  std::vector<int32_t> times;  // local minutes of the day
  for (int h = 0; h < 24; ++h) {
    if (!cron.hours[h]) continue;
    for (int m = 0; m < 60; ++m) {
      if (cron.minutes[m]) times.push_back(h * 60 + m);
    }
  }
  if (times.empty() || kMinutesPerDay % times.size() != 0) return std::nullopt;
  const int32_t period = static_cast<int32_t>(kMinutesPerDay / times.size());
  for (size_t i = 0; i < times.size(); ++i) {
    if (times[i] != times[0] + static_cast<int32_t>(i) * period) return std::nullopt;
  }
  if (std::find(intervals.begin(), intervals.end(), period) == intervals.end()) return std::nullopt;
  IntervalEquivalent eq;
  eq.interval_minutes = period;
  eq.offset_minutes = static_cast<int32_t>(PositiveMod(times[0] - OffsetMinutes(info), period));
  return eq;
}

Status PlanCalendarJob(const TimeZoneDatabase& zones, std::string_view cron_text, std::string_view zone_name,
                       EpochMs now, const std::vector<int32_t>& intervals, JobSpec* spec) {
  StatusOr<CronExpression> cron = ParseCronExpression(cron_text);
  if (!cron.ok()) return cron.status();
  StatusOr<const TimeZone*> zone = LocateTimeZone(zones, zone_name);
  if (!zone.ok()) return zone.status();
  if (!CronCanEverMatch(*cron)) {
    return Reject("cron_never_fires",
                  fmt::format("cron \"{}\" names no date that exists (day-of-month and month never meet)",
                              cron->normalized));
  }
  const int64_t from =
      std::max(EpochMinuteOf(now), spec->start_at ? EpochMinuteOf(*spec->start_at) : INT64_MIN);
  if (spec->end_at) {
    const int64_t before = EpochMinuteOf(*spec->end_at) + 1;
    if (NextCalendarFires(*cron, *zone, from - 1, 1, before).empty()) {
      return Reject(
          "cron_never_fires",
          fmt::format("cron \"{}\" in {} has no fire time between {} and endDateTime {}", cron->normalized,
                      zone_name, FormatIsoTime(from * kMsPerMinute), FormatIsoTime(*spec->end_at)));
    }
  }
  CalendarSpec cal;
  cal.cron = cron->normalized;
  cal.time_zone = std::string(zone_name);
  if (const std::optional<IntervalEquivalent> eq = CalendarAsInterval(*cron, *zone, now, intervals)) {
    cal.as_interval = true;
    spec->interval_minutes = eq->interval_minutes;
    spec->offset_minutes = eq->offset_minutes;
  } else {
    cal.slots = CalendarSlotsFor(*cron);
    spec->interval_minutes = 0;
    spec->offset_minutes = 0;
  }
  spec->offset_explicit = true;
  spec->offset_pinned = true;
  spec->calendar = std::move(cal);
  return Status::Ok();
}

std::vector<CalendarFire> NextCalendarJobFires(const TimeZoneDatabase& zones, const JobSpec& spec,
                                               int64_t tick_ms, EpochMs after_ms, int n) {
  if (!spec.calendar) return {};
  StatusOr<CronExpression> cron = ParseCronExpression(spec.calendar->cron);
  if (!cron.ok()) return {};
  StatusOr<const TimeZone*> zone = LocateTimeZone(zones, spec.calendar->time_zone);
  if (!zone.ok()) return {};
  int64_t after = LastSlotMinuteAtOrBefore(after_ms, spec.shard, tick_ms);
  if (spec.start_at)
    after = std::max(after, LastSlotMinuteAtOrBefore(*spec.start_at - 1, spec.shard, tick_ms));
  const int64_t before =
      spec.end_at ? LastSlotMinuteAtOrBefore(*spec.end_at - 1, spec.shard, tick_ms) + 1 : INT64_MAX / 2;
  return NextCalendarFires(*cron, *zone, after, n, before);
}

std::string FormatLocalTime(int64_t local_minute, int32_t utc_offset_minutes) {
  const int64_t day_number = FloorDiv(local_minute, kMinutesPerDay);
  const int minute_of_day = static_cast<int>(local_minute - day_number * kMinutesPerDay);
  const date::year_month_day ymd{date::sys_days(date::days(day_number))};
  const int32_t abs_offset = utc_offset_minutes < 0 ? -utc_offset_minutes : utc_offset_minutes;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:00{}{:02}:{:02}", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), minute_of_day / 60,
                     minute_of_day % 60, utc_offset_minutes < 0 ? '-' : '+', abs_offset / 60,
                     abs_offset % 60);
}

std::vector<NextFire> NextFires(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                int64_t tick_ms, EpochMs now, int n) {
  std::vector<NextFire> out;
  if (paused) return out;
  if (spec.calendar) {
    for (const CalendarFire& f : NextCalendarJobFires(zones, spec, tick_ms, now, n)) {
      out.push_back(NextFire{SlotMs(f.utc_minute, spec.shard, tick_ms),
                             FormatLocalTime(f.local_minute, f.utc_offset_minutes), f.mark});
    }
  } else {
    for (EpochMs at : NextJobTriggerTimes(zones, spec, tick_ms, now, n)) {
      out.push_back(NextFire{at, FormatLocalTime(EpochMinuteOf(at), 0), CalendarFire::Mark::kNone});
    }
  }
  return out;
}

std::string EncodeNextFires(const std::vector<NextFire>& fires) {
  std::string out = "[";
  for (const NextFire& f : fires) {
    if (out.size() > 1) out.push_back(',');
    out.append("{\"at\":");
    AppendJsonString(&out, FormatIsoTime(f.at));
    out.append(",\"local\":");
    AppendJsonString(&out, f.local);
    out.append(",\"dst\":");
    if (f.mark == CalendarFire::Mark::kNone) {
      out.append("null");
    } else {
      AppendJsonString(&out, CalendarMarkName(f.mark));
    }
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

}  // namespace belfry
