// LoadProjection: how many triggers each shard-minute of a window will carry, computed from the
// stored schedules without firing anything (issue 18; docs/load-projection.md). An operator sees
// a thundering herd (a million jobs at 09:00) before it happens.
//
// The store reads the jobs as groups (LoadGroup): jobs that fire in exactly the same minutes of the
// window, counted. ProjectLoad then applies the tick's own rules to each group, minute by minute:
//   - interval jobs: due where the tick's terms (TermsForMinute) ask for their interval and
//     offset, and start_at <= slot < end_at, as the tick query checks them at the slot;
//   - one-shots (and stored retries): in their run_minute;
//   - slot-planned calendar jobs: where one of their cron_slots rows matches one of the minute's
//     calendar terms (AppendCalendarTerms), once per job however many rows match (the tick's
//     DISTINCT), with start/end as above.
// Paused jobs are not read. So the projection agrees with what the tick fires, for as long as no
// command changes the jobs; the integration test checks it against a fired window.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/clock.h"
#include "belfry/load_group.h"
#include "belfry/shard_layout.h"
#include "belfry/status.h"
#include "core/calendar_schedule.h"
#include "core/slot_math.h"  // kMinutesPerDay

namespace belfry {

struct LoadWindow {
  int64_t first_minute = 0;  // epoch minutes, inclusive
  int64_t last_minute = 0;   // REQUIRES: first_minute <= last_minute
  // The database's shard layout record (docs/resharding.md): a group's stored shard is fired in
  // each minute by that minute's firing shard, at its slot (FiringShardRow, StoredShardSlotMs).
  ShardLayout layout;
  // The grid: the most shards any minute fires with (MaxFiringShards) and the newest firing
  // layout's tick (LatestTickMs), which place each shard's triggers in a second of the minute.
  int32_t shard_count = 120;
  int64_t tick_ms = 500;
  std::vector<int32_t> intervals;  // scheduler.intervals: the intervals the tick asks for
};

struct LoadLabelTotal {
  std::string label;
  int64_t triggers = 0;
};

struct LoadProjection {
  LoadWindow window;
  // Triggers per shard-minute: counts[(minute - first_minute) * shard_count + shard].
  std::vector<int64_t> counts;
  int64_t total = 0;
  // With labelled groups: triggers per label over the window, most first (ties by label).
  std::vector<LoadLabelTotal> by_label;

  int64_t At(int64_t minute, int32_t shard) const {
    return counts[static_cast<size_t>((minute - window.first_minute) * window.shard_count + shard)];
  }
  int64_t MinuteTotal(int64_t minute) const;
  // The second of the minute in which `shard`'s slot falls: floor(shard * tick_ms / 1000).
  int32_t SecondOf(int32_t shard) const;
  // Triggers per second of `minute` (60 values; a shard's triggers count in its slot's second).
  std::vector<int64_t> Seconds(int64_t minute) const;
  // A minute's total with its busiest shard and busiest second (the lowest on ties).
  struct MinuteSummary {
    int64_t total = 0;
    int32_t shard = 0;
    int64_t shard_triggers = 0;
    int32_t second = 0;
    int64_t second_triggers = 0;
  };
  MinuteSummary Summarize(int64_t minute) const;
};

// Projects `groups` over `window`. `zones` are the calendar zones (cron_zones), as the tick
// uses them. Groups of stored shards outside [0, StoredShardCount(layout)) are ignored.
LoadProjection ProjectLoad(const LoadWindow& window, const std::vector<LoadGroup>& groups,
                           const std::vector<ZoneEntry>& zones);

// The same over what a JobStore read: its zones are looked up in `time_zones` first, and a zone
// the database does not know is left out, as the tick leaves it out.
LoadProjection ProjectLoad(const TimeZoneDatabase& time_zones, const LoadWindow& window,
                           const LoadGroups& read);

// The window of `GET /v1/load` and `belfry load`: `from` (ISO-8601; empty: the next minute)
// rounded down to its minute, to `to` (empty: from + 60 minutes) rounded up, exclusive; at
// most kMaxLoadWindowMinutes. Invalid (reason "invalid_window") with a message that names the
// parameter.
constexpr int64_t kMaxLoadWindowMinutes = kMinutesPerDay;
StatusOr<LoadWindow> ParseLoadWindow(std::string_view from, std::string_view to, EpochMs now,
                                     const ShardLayout& layout, const std::vector<int32_t>& intervals);

// The breakdown of `GET /v1/load?by=` and `belfry load --by`: "" (none), "owner", "topic", or
// "label:<key>" (the value of each job's label <key>; "" for jobs without it).
struct LoadBreakdown {
  enum class Kind { kNone, kOwner, kTopic, kLabel };
  Kind kind = Kind::kNone;
  std::string label_key;  // kLabel
};
// Invalid ("invalid_by") unless `by` is one of the above with a key by the label rules
// (core/job_labels.h); the message names what was given.
StatusOr<LoadBreakdown> ParseLoadBreakdown(std::string_view by);

// The projection as the admin API and `belfry load --json` return it (docs/load-projection.md):
// totals, the peak minute, shard and second, every minute's total with its busiest shard and
// second, and, with `with_shards`, each minute's 120 (shard_count) shard counts. `by` names
// the breakdown ("owner", "topic", "label:<key>" or "" for none); `top` caps its list.
std::string EncodeLoadProjectionJson(const LoadProjection& p, const std::string& by, bool with_shards, int top);

}  // namespace belfry
