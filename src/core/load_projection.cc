#include "core/load_projection.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "core/iso_time.h"
#include "core/job_labels.h"
#include "core/json_writer.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"

namespace belfry {
namespace {

bool WithinDates(const LoadGroup& g, EpochMs slot) {
  if (g.start_at && *g.start_at > slot) return false;
  if (g.end_at && *g.end_at <= slot) return false;
  return true;
}

bool SlotMatches(const LoadSlotRow& row, const CalendarTerm& t) {
  if ((row.hour_mask & t.hour_bit) == 0 || (row.month_mask & t.month_bit) == 0) return false;
  const bool dom = (row.dom_mask & t.dom_bit) != 0;
  const bool dow = (row.dow_mask & t.dow_bit) != 0;
  return row.day_or ? (dom || dow) : (dom && dow);
}

uint64_t IntervalKey(int32_t interval, int32_t offset) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(interval)) << 32) | static_cast<uint32_t>(offset);
}

}  // namespace

int64_t LoadProjection::MinuteTotal(int64_t minute) const {
  int64_t sum = 0;
  for (int32_t s = 0; s < window.shard_count; ++s) sum += At(minute, s);
  return sum;
}

int32_t LoadProjection::SecondOf(int32_t shard) const {
  return static_cast<int32_t>(std::min<int64_t>(59, shard * window.tick_ms / 1000));
}

std::vector<int64_t> LoadProjection::Seconds(int64_t minute) const {
  std::vector<int64_t> out(60, 0);
  for (int32_t s = 0; s < window.shard_count; ++s) out[static_cast<size_t>(SecondOf(s))] += At(minute, s);
  return out;
}

LoadProjection::MinuteSummary LoadProjection::Summarize(int64_t minute) const {
  MinuteSummary out;
  out.shard_triggers = -1;
  for (int32_t s = 0; s < window.shard_count; ++s) {
    const int64_t n = At(minute, s);
    out.total += n;
    if (n > out.shard_triggers) out.shard_triggers = n, out.shard = s;
  }
  const std::vector<int64_t> seconds = Seconds(minute);
  const auto busiest = std::max_element(seconds.begin(), seconds.end());
  out.second = static_cast<int32_t>(busiest - seconds.begin());
  out.second_triggers = *busiest;
  return out;
}

LoadProjection ProjectLoad(const LoadWindow& window, const std::vector<LoadGroup>& groups,
                           const std::vector<ZoneEntry>& zones) {
  LoadProjection p;
  p.window = window;
  const int64_t minutes = window.last_minute - window.first_minute + 1;
  p.counts.assign(static_cast<size_t>(std::max<int64_t>(0, minutes) * window.shard_count), 0);
  if (minutes <= 0) return p;

  // Index the groups by what the tick asks for.
  std::unordered_map<uint64_t, std::vector<size_t>> by_interval;
  std::unordered_map<int64_t, std::vector<size_t>> by_run_minute;
  std::unordered_map<int64_t, std::vector<std::pair<size_t, size_t>>> by_slot_key;  // (group, row)
  for (size_t i = 0; i < groups.size(); ++i) {
    const LoadGroup& g = groups[i];
    if (g.shard < 0 || g.shard >= StoredShardCount(window.layout) || g.jobs <= 0) continue;
    switch (g.kind) {
      case LoadGroup::Kind::kInterval:
        by_interval[IntervalKey(g.interval_minutes, g.offset_minutes)].push_back(i);
        break;
      case LoadGroup::Kind::kOneShot:
        if (g.run_minute >= window.first_minute && g.run_minute <= window.last_minute)
          by_run_minute[g.run_minute].push_back(i);
        break;
      case LoadGroup::Kind::kCalendar:
        for (size_t r = 0; r < g.slots.size(); ++r) by_slot_key[g.slots[r].key].push_back({i, r});
        break;
    }
  }

  std::unordered_map<std::string, int64_t> labels;
  std::vector<int64_t> fired_in(groups.size(), INT64_MIN);  // calendar: the minute a group last fired
  std::vector<CalendarTerm> terms;
  const auto add = [&](const LoadGroup& g, int64_t minute) {
    if (!WithinDates(g, StoredShardSlotMs(window.layout, minute, g.shard))) return;
    const int32_t firing = FiringShardRow(window.layout, minute, g.shard);
    if (firing >= window.shard_count) return;
    p.counts[static_cast<size_t>((minute - window.first_minute) * window.shard_count + firing)] += g.jobs;
    p.total += g.jobs;
    if (!g.label.empty()) labels[g.label] += g.jobs;
  };
  for (int64_t m = window.first_minute; m <= window.last_minute; ++m) {
    for (const PhaseTerm& t : TermsForMinute(window.intervals, m)) {
      for (int32_t offset : t.offsets) {
        auto it = by_interval.find(IntervalKey(t.interval_minutes, offset));
        if (it == by_interval.end()) continue;
        for (size_t i : it->second) add(groups[i], m);
      }
    }
    if (auto it = by_run_minute.find(m); it != by_run_minute.end()) {
      for (size_t i : it->second) add(groups[i], m);
    }
    if (by_slot_key.empty()) continue;
    terms.clear();
    AppendCalendarTerms(zones, m, &terms);
    for (const CalendarTerm& t : terms) {
      auto it = by_slot_key.find(t.key);
      if (it == by_slot_key.end()) continue;
      for (const auto& [i, r] : it->second) {
        if (fired_in[i] == m || !SlotMatches(groups[i].slots[r], t)) continue;
        fired_in[i] = m;  // a job fires once a minute, however many of its rows match
        add(groups[i], m);
      }
    }
  }

  p.by_label.reserve(labels.size());
  for (auto& [label, n] : labels) p.by_label.push_back({label, n});
  std::sort(p.by_label.begin(), p.by_label.end(), [](const LoadLabelTotal& a, const LoadLabelTotal& b) {
    return a.triggers != b.triggers ? a.triggers > b.triggers : a.label < b.label;
  });
  return p;
}

LoadProjection ProjectLoad(const TimeZoneDatabase& time_zones, const LoadWindow& window,
                           const LoadGroups& read) {
  std::vector<ZoneEntry> zones;
  for (const auto& [id, name] : read.zones) {
    if (StatusOr<const TimeZone*> zone = LocateTimeZone(time_zones, name); zone.ok())
      zones.push_back({id, *zone});
  }
  return ProjectLoad(window, read.groups, zones);
}

StatusOr<LoadBreakdown> ParseLoadBreakdown(std::string_view by) {
  LoadBreakdown out;
  if (by.empty()) return out;
  if (by == "owner") {
    out.kind = LoadBreakdown::Kind::kOwner;
  } else if (by == "topic") {
    out.kind = LoadBreakdown::Kind::kTopic;
  } else if (by.starts_with("label:")) {
    out.kind = LoadBreakdown::Kind::kLabel;
    out.label_key = std::string(by.substr(6));
    if (Status st = CheckLabelKey(out.label_key); !st.ok()) {
      return Status::Invalid("invalid_by", "by=label:<key> needs a label key: " + st.message());
    }
  } else {
    return Status::Invalid("invalid_by", "by must be owner, topic or label:<key>, got \"" +
                                             std::string(by.substr(0, 100)) + "\"");
  }
  return out;
}

StatusOr<LoadWindow> ParseLoadWindow(std::string_view from, std::string_view to, EpochMs now,
                                     const ShardLayout& layout, const std::vector<int32_t>& intervals) {
  LoadWindow w;
  w.layout = layout;
  w.shard_count = MaxFiringShards(layout);
  w.tick_ms = LatestTickMs(layout);
  w.intervals = intervals;
  const auto bad = [](std::string message) { return Status::Invalid("invalid_window", std::move(message)); };
  if (from.empty()) {
    w.first_minute = EpochMinuteOf(now) + 1;
  } else {
    const std::optional<EpochMs> t = ParseIsoTime(from);
    if (!t) return bad("from is not an ISO-8601 time (2026-11-26T09:00:00Z): \"" + std::string(from) + "\"");
    w.first_minute = EpochMinuteOf(*t);
  }
  int64_t end_minute = w.first_minute + 60;  // exclusive
  if (!to.empty()) {
    const std::optional<EpochMs> t = ParseIsoTime(to);
    if (!t) return bad("to is not an ISO-8601 time (2026-11-26T10:00:00Z): \"" + std::string(to) + "\"");
    end_minute = EpochMinuteOf(*t) + (PositiveMod(*t, kMsPerMinute) != 0 ? 1 : 0);
  }
  if (end_minute <= w.first_minute) return bad("to must be after from");
  if (end_minute - w.first_minute > kMaxLoadWindowMinutes) {
    return bad("the window is " + std::to_string(end_minute - w.first_minute) + " minutes; at most " +
               std::to_string(kMaxLoadWindowMinutes) + " (one day) can be projected at once");
  }
  w.last_minute = end_minute - 1;
  return w;
}

std::string EncodeLoadProjectionJson(const LoadProjection& p, const std::string& by, bool with_shards, int top) {
  const LoadWindow& w = p.window;
  std::string out;
  const auto num = [&out](int64_t v) { out.append(std::to_string(v)); };
  const auto iso_minute = [&out](int64_t minute) { AppendJsonTimeOrNull(&out, minute * kMsPerMinute); };

  // The peak shard-minute and the peak second.
  int64_t peak_minute = w.first_minute, peak_minute_total = -1;
  int64_t peak_sm_minute = w.first_minute, peak_sm = -1;
  int32_t peak_sm_shard = 0;
  int64_t peak_sec_minute = w.first_minute, peak_sec = -1;
  int32_t peak_sec_second = 0;
  out.append("{\"from\":");
  iso_minute(w.first_minute);
  out.append(",\"to\":");
  iso_minute(w.last_minute + 1);
  out.append(",\"minutes\":[");
  for (int64_t m = w.first_minute; m <= w.last_minute; ++m) {
    const LoadProjection::MinuteSummary sum = p.Summarize(m);
    const int64_t total = sum.total, max_shard = sum.shard_triggers, max_sec = sum.second_triggers;
    const int32_t max_shard_at = sum.shard, max_sec_at = sum.second;
    if (total > peak_minute_total) peak_minute_total = total, peak_minute = m;
    if (max_shard > peak_sm) peak_sm = max_shard, peak_sm_minute = m, peak_sm_shard = max_shard_at;
    if (max_sec > peak_sec) peak_sec = max_sec, peak_sec_minute = m, peak_sec_second = max_sec_at;
    if (m != w.first_minute) out.push_back(',');
    out.append("{\"at\":");
    iso_minute(m);
    out.append(",\"triggers\":");
    num(total);
    out.append(",\"busiestShard\":{\"shard\":");
    num(max_shard_at);
    out.append(",\"triggers\":");
    num(max_shard);
    out.append("},\"busiestSecond\":{\"second\":");
    num(max_sec_at);
    out.append(",\"triggers\":");
    num(max_sec);
    out.push_back('}');
    if (with_shards) {
      out.append(",\"shards\":[");
      for (int32_t s = 0; s < w.shard_count; ++s) {
        if (s) out.push_back(',');
        num(p.At(m, s));
      }
      out.push_back(']');
    }
    out.push_back('}');
  }
  out.append("],\"total\":");
  num(p.total);
  out.append(",\"peak\":{\"minute\":{\"at\":");
  iso_minute(peak_minute);
  out.append(",\"triggers\":");
  num(std::max<int64_t>(0, peak_minute_total));
  out.append("},\"shardMinute\":{\"at\":");
  iso_minute(peak_sm_minute);
  out.append(",\"shard\":");
  num(peak_sm_shard);
  out.append(",\"triggers\":");
  num(std::max<int64_t>(0, peak_sm));
  out.append("},\"second\":{\"at\":");
  AppendJsonTimeOrNull(&out, peak_sec_minute * kMsPerMinute + peak_sec_second * 1000LL);
  out.append(",\"triggers\":");
  num(std::max<int64_t>(0, peak_sec));
  out.append("}},\"shardCount\":");
  num(w.shard_count);
  out.append(",\"tickMs\":");
  num(w.tick_ms);
  if (!by.empty()) {
    out.append(",\"by\":");
    AppendJsonString(&out, by);
    out.append(",\"top\":[");
    const size_t n = std::min(p.by_label.size(), static_cast<size_t>(std::max(0, top)));
    // Each item names its owner or topic, or for by=label:<key> the label's "value".
    const std::string name = by.starts_with("label:") ? "value" : by;
    for (size_t i = 0; i < n; ++i) {
      if (i) out.push_back(',');
      out.push_back('{');
      AppendJsonString(&out, name);
      out.push_back(':');
      AppendJsonString(&out, p.by_label[i].label);
      out.append(",\"triggers\":");
      num(p.by_label[i].triggers);
      out.push_back('}');
    }
    out.append("],\"labels\":");
    num(static_cast<int64_t>(p.by_label.size()));
  }
  out.push_back('}');
  return out;
}

}  // namespace belfry
