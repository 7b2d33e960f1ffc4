#include "loadtest/trigger_expectations.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <numeric>
#include <set>
#include <stdexcept>

#include "core/calendar_schedule.h"
#include "core/shard_hash.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry::loadtest {
namespace {

template <typename T>
T ParseNumber(std::string_view text, const char* what) {
  T v{};
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) {
    throw std::runtime_error(fmt::format("jobs table: bad {} '{}'", what, text));
  }
  return v;
}

std::optional<EpochMs> ParseOptionalMs(std::string_view text) {
  if (text == "\\N") return std::nullopt;
  return ParseNumber<EpochMs>(text, "timestamp");
}

// Undoes COPY text-format escaping (\\, \t, \n, \r, \b, \f, \v); ids rarely need it.
std::string CopyUnescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out.push_back(text[i]);
      continue;
    }
    const char c = text[++i];
    switch (c) {
      case 't':
        out.push_back('\t');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'v':
        out.push_back('\v');
        break;
      default:
        out.push_back(c);
        break;
    }
  }
  return out;
}

std::string SqlLiteral(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  return out + "'";
}

}  // namespace

void TriggerExpectations::Load(PgConnection& conn, const std::string& topic_prefix) {
  const std::string shard_count =
      conn.ExecScalar("SELECT COALESCE((SELECT value FROM belfry_meta WHERE key = 'shard_count'), '120')");
  shard_count_ = ParseNumber<int32_t>(shard_count, "shard_count");
  if (shard_count_ <= 0 || 60'000 % shard_count_ != 0) {
    throw std::runtime_error("belfry_meta: shard_count must divide 60000 ms");
  }
  tick_ms_ = 60'000 / shard_count_;
  // A reshard's record (migration 0016): each minute's slots follow its layout, and every job is
  // checked at the shard it is stored in once the move is done (so a window may span the move).
  layout_ = ShardLayout{shard_count_};
  const std::string record = conn.ExecScalar("SELECT COALESCE((SELECT value FROM belfry_meta WHERE key = 'layout'), '')");
  if (!record.empty()) {
    StatusOr<ShardLayout> parsed = ParseShardLayout(record);
    if (!parsed.ok()) throw std::runtime_error("belfry_meta layout: " + parsed.status().ToString());
    layout_ = *parsed;
    shard_count_ = StoredShardCount(layout_);
    tick_ms_ = LatestTickMs(layout_);
  }

  const int64_t approx = std::max<int64_t>(
      1024, ParseNumber<int64_t>(conn.ExecScalar("SELECT GREATEST(reltuples, 0)::bigint FROM pg_class "
                                                 "WHERE oid = 'jobs'::regclass"),
                                 "row estimate"));
  size_t capacity = 1;
  while (capacity < static_cast<size_t>(approx) * 2) capacity <<= 1;
  index_.assign(capacity, 0);
  jobs_.reserve(static_cast<size_t>(approx));
  id_begin_.reserve(static_cast<size_t>(approx) + 1);
  arena_.reserve(static_cast<size_t>(approx) * 24);

  std::set<std::string, std::less<>> topics;
  // Interning: each distinct expression text is parsed once, each zone located once.
  std::unordered_map<std::string, uint32_t> expression_ids;
  std::unordered_map<std::string, uint16_t> zone_ids;
  const auto intern_expression = [&](std::string_view field) {
    std::string text = CopyUnescape(field);
    const auto it = expression_ids.find(text);
    if (it != expression_ids.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(expressions_.size());
    StatusOr<CronExpression> parsed = ParseCronExpression(text);
    expressions_.push_back(parsed.ok() ? std::optional<CronExpression>(std::move(*parsed)) : std::nullopt);
    expression_ids.emplace(std::move(text), id);
    return id;
  };
  const auto intern_zone = [&](std::string_view field) {
    std::string name = CopyUnescape(field);
    const auto it = zone_ids.find(name);
    if (it != zone_ids.end()) return it->second;
    if (zones_.size() > UINT16_MAX)
      throw std::runtime_error("jobs table: more than 65536 distinct time zones");
    const uint16_t id = static_cast<uint16_t>(zones_.size());
    StatusOr<const TimeZone*> zone = LocateTimeZone(SystemTimeZones(), name);
    zones_.push_back(zone.ok() ? *zone : nullptr);
    zone_ids.emplace(std::move(name), id);
    return id;
  };

  const std::string sql = fmt::format(
      "COPY (SELECT id, shard, interval_minutes, offset_minutes, paused,"
      " floor(extract(epoch FROM start_at) * 1000)::bigint, floor(extract(epoch FROM end_at) * 1000)::bigint,"
      " topic, cron_expr, time_zone FROM jobs WHERE left(topic, {}) = {}) TO STDOUT",
      topic_prefix.size(), SqlLiteral(topic_prefix));
  conn.CopyOut(sql, [&](std::string_view line) {
    const std::vector<std::string_view> f = SplitCopyRow(line);
    if (f.size() != 10) throw std::runtime_error("jobs table: unexpected COPY row");
    JobInfo job;
    job.shard = ParseNumber<int16_t>(f[1], "shard");
    if (layout_.phase != ShardLayout::Phase::kStable) {  // where the move puts it
      job.shard = static_cast<int16_t>(
          ShardForId(f[0].find('\\') == std::string_view::npos ? std::string(f[0]) : CopyUnescape(f[0]), layout_.to));
    }
    job.interval = ParseNumber<int16_t>(f[2], "interval_minutes");
    job.offset = ParseNumber<int16_t>(f[3], "offset_minutes");
    job.paused = f[4] == "t" ? 1 : 0;
    const std::optional<EpochMs> start_at = ParseOptionalMs(f[5]);
    const std::optional<EpochMs> end_at = ParseOptionalMs(f[6]);
    if (f[8] != "\\N") {
      // Judged by the calendar rule, whatever interval belfry stored it with.
      job.cron = 1;
      CronRef ref;
      ref.job = static_cast<uint32_t>(jobs_.size());
      ref.expression = intern_expression(f[8]);
      ref.zone = f[9] == "\\N" ? intern_zone("UTC") : intern_zone(f[9]);
      if (zones_[ref.zone] == nullptr) {
        ++cron_unknown_zone_jobs_;
      } else if (!expressions_[ref.expression]) {
        ++cron_invalid_jobs_;
      }
      cron_.push_back(ref);
    } else if (job.interval <= 0) {
      throw std::runtime_error("jobs table: interval_minutes must be positive");
    }
    if (start_at || end_at) {
      job.has_dates = 1;
      dates_[static_cast<uint32_t>(jobs_.size())] = Dates{start_at, end_at};
    }
    paused_jobs_ += job.paused;
    if (topics.find(f[7]) == topics.end()) topics.emplace(f[7]);
    if (f[0].find('\\') == std::string_view::npos) {
      Intern(f[0]);
    } else {
      Intern(CopyUnescape(f[0]));
    }
    jobs_.push_back(job);
  });
  topics_.assign(topics.begin(), topics.end());
}

void TriggerExpectations::Intern(std::string_view id) {
  if (jobs_.size() >= UINT32_MAX - 1) throw std::runtime_error("jobs table: too many jobs");
  if (jobs_.size() * 2 >= index_.size()) {  // grow: rehash every id
    std::vector<uint32_t> bigger(index_.size() * 2, 0);
    const size_t mask = bigger.size() - 1;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      size_t slot = Fnv1a64(IdOf(i)) & mask;
      while (bigger[slot] != 0) slot = (slot + 1) & mask;
      bigger[slot] = static_cast<uint32_t>(i + 1);
    }
    index_.swap(bigger);
  }
  const size_t mask = index_.size() - 1;
  size_t slot = Fnv1a64(id) & mask;
  while (index_[slot] != 0) slot = (slot + 1) & mask;  // ids are unique (primary key)
  index_[slot] = static_cast<uint32_t>(jobs_.size() + 1);
  arena_.append(id);
  id_begin_.push_back(arena_.size());
}

int64_t TriggerExpectations::Find(std::string_view id) const {
  const size_t mask = index_.size() - 1;
  size_t slot = Fnv1a64(id) & mask;
  while (index_[slot] != 0) {
    const size_t i = index_[slot] - 1;
    if (IdOf(i) == id) return static_cast<int64_t>(i);
    slot = (slot + 1) & mask;
  }
  return -1;
}

void TriggerExpectations::DatesOf(size_t index, std::optional<EpochMs>* start_at,
                                  std::optional<EpochMs>* end_at) const {
  if (!jobs_[index].has_dates) return;
  const Dates& d = dates_.at(static_cast<uint32_t>(index));
  *start_at = d.start_at;
  *end_at = d.end_at;
}

bool TriggerExpectations::DueAt(size_t index, int64_t minute, EpochMs slot_ms) const {
  const JobInfo& job = jobs_[index];
  std::optional<EpochMs> start_at;
  std::optional<EpochMs> end_at;
  DatesOf(index, &start_at, &end_at);
  return IsDueAtSlot(job.interval, job.offset, start_at, end_at, job.paused != 0, minute, slot_ms);
}

size_t TriggerExpectations::CronPosition(size_t index) const {
  const auto it = std::lower_bound(cron_.begin(), cron_.end(), index,
                                   [](const CronRef& ref, size_t job) { return ref.job < job; });
  return static_cast<size_t>(it - cron_.begin());
}

void TriggerExpectations::ComputeCronDue() {
  const size_t minutes = static_cast<size_t>(minutes_);
  cron_due_.assign((cron_.size() * minutes + 63) / 64, 0);
  if (minutes == 0 || cron_.empty()) return;
  // By (expression, zone), so each distinct schedule's fires are worked out once per window.
  std::vector<uint32_t> order(cron_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::pair(cron_[a].expression, cron_[a].zone) < std::pair(cron_[b].expression, cron_[b].zone);
  });
  std::vector<CalendarFire> fires;
  for (size_t g = 0; g < order.size();) {
    const CronRef& first = cron_[order[g]];
    size_t end = g + 1;
    while (end < order.size() && cron_[order[end]].expression == first.expression &&
           cron_[order[end]].zone == first.zone) {
      ++end;
    }
    const std::optional<CronExpression>& cron = expressions_[first.expression];
    const TimeZone* zone = zones_[first.zone];
    fires.clear();
    if (cron && zone != nullptr) {
      fires = NextCalendarFires(*cron, zone, first_minute_ - 1, static_cast<int>(minutes),
                                first_minute_ + minutes_);
    }
    for (; g < end && !fires.empty(); ++g) {
      const size_t position = order[g];
      const size_t index = cron_[position].job;
      const JobInfo& job = jobs_[index];
      if (job.paused) continue;
      std::optional<EpochMs> start_at;
      std::optional<EpochMs> end_at;
      DatesOf(index, &start_at, &end_at);
      for (const CalendarFire& fire : fires) {
        const EpochMs slot = SlotOf(fire.utc_minute, job.shard);
        // Interval 1, offset 0: due in every minute, so this checks start/end at the slot alone.
        if (slot < first_ms_ || slot > last_ms_ ||
            !IsDueAtSlot(1, 0, start_at, end_at, false, fire.utc_minute, slot)) {
          continue;
        }
        const uint64_t bit = position * minutes + static_cast<size_t>(fire.utc_minute - first_minute_);
        cron_due_[bit / 64] |= uint64_t{1} << (bit % 64);
      }
    }
    g = end;
  }
}

template <typename Fn>
void TriggerExpectations::ForEachDueSlot(size_t index, Fn fn) const {
  const JobInfo& job = jobs_[index];
  if (job.paused || job.cron) return;
  const int64_t last_minute = first_minute_ + minutes_ - 1;
  for (int64_t m = first_minute_ + PositiveMod(job.offset - first_minute_, job.interval); m <= last_minute;
       m += job.interval) {
    const EpochMs slot = SlotOf(m, job.shard);
    if (slot >= first_ms_ && slot <= last_ms_ && DueAt(index, m, slot)) fn(m, slot);
  }
}

template <typename Fn>
void TriggerExpectations::ForEachCronDueSlot(size_t position, Fn fn) const {
  const size_t minutes = static_cast<size_t>(minutes_);
  const int32_t shard = jobs_[cron_[position].job].shard;
  for (size_t k = 0; k < minutes; ++k) {
    const uint64_t bit = position * minutes + k;
    if ((cron_due_[bit / 64] >> (bit % 64)) & 1) {
      const int64_t minute = first_minute_ + static_cast<int64_t>(k);
      fn(minute, SlotOf(minute, shard));
    }
  }
}

EpochMs TriggerExpectations::SlotOf(int64_t minute, int32_t stored_shard) const {
  return StoredShardSlotMs(layout_, minute, stored_shard);
}

void TriggerExpectations::SetWindow(EpochMs first_ms, EpochMs last_ms) {
  first_ms_ = first_ms;
  last_ms_ = last_ms;
  first_minute_ = EpochMinuteOf(first_ms) - 1;
  minutes_ = std::max<int64_t>(0, EpochMinuteOf(last_ms) - first_minute_ + 1);
  seen_.assign((jobs_.size() * static_cast<size_t>(minutes_) + 63) / 64, 0);
  arrived_ = 0;
  expected_ = 0;
  for (size_t i = 0; i < jobs_.size(); ++i) ForEachDueSlot(i, [&](int64_t, EpochMs) { ++expected_; });
  ComputeCronDue();
  for (const uint64_t word : cron_due_) expected_ += std::popcount(word);
}

TriggerExpectations::Verdict TriggerExpectations::Record(std::string_view job_id, EpochMs scheduled_for_ms) {
  const int64_t index = Find(job_id);
  if (index < 0 || jobs_[static_cast<size_t>(index)].released) return Verdict::kUnknownJob;
  if (scheduled_for_ms < first_ms_ || scheduled_for_ms > last_ms_) return Verdict::kOutsideWindow;
  const JobInfo& job = jobs_[static_cast<size_t>(index)];
  const int64_t minute = EpochMinuteOf(scheduled_for_ms);
  if (scheduled_for_ms != SlotOf(minute, job.shard)) return Verdict::kNotDue;
  if (job.cron) {
    const uint64_t due_bit = CronPosition(static_cast<size_t>(index)) * static_cast<uint64_t>(minutes_) +
                             static_cast<uint64_t>(minute - first_minute_);
    if (((cron_due_[due_bit / 64] >> (due_bit % 64)) & 1) == 0) return Verdict::kNotDue;
  } else if (!DueAt(static_cast<size_t>(index), minute, scheduled_for_ms)) {
    return Verdict::kNotDue;
  }
  const uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(minutes_) +
                       static_cast<uint64_t>(minute - first_minute_);
  uint64_t& word = seen_[bit / 64];
  const uint64_t mask = uint64_t{1} << (bit % 64);
  if (word & mask) return Verdict::kDuplicate;
  word |= mask;
  ++arrived_;
  return Verdict::kExpected;
}

int64_t TriggerExpectations::CountMissing(std::vector<MissingTrigger>* examples, size_t limit) const {
  int64_t missing = 0;
  ForEachMissing([&](std::string_view id, EpochMs slot) {
    ++missing;
    if (examples != nullptr && examples->size() < limit) examples->push_back({std::string(id), slot});
  });
  return missing;
}

void TriggerExpectations::ForEachMissing(const std::function<void(std::string_view, EpochMs)>& fn) const {
  size_t cron_position = 0;  // cron_ is in job order
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const auto check = [&](int64_t minute, EpochMs slot) {
      const uint64_t bit = static_cast<uint64_t>(i) * static_cast<uint64_t>(minutes_) +
                           static_cast<uint64_t>(minute - first_minute_);
      if ((seen_[bit / 64] >> (bit % 64)) & 1) return;
      fn(IdOf(i), slot);
    };
    if (jobs_[i].cron) {
      ForEachCronDueSlot(cron_position++, check);
    } else if (!jobs_[i].released) {
      ForEachDueSlot(i, check);
    }
  }
}

std::optional<TriggerExpectations::IntervalJobView> TriggerExpectations::IntervalJobOf(
    std::string_view id) const {
  const int64_t index = Find(id);
  if (index < 0) return std::nullopt;
  const JobInfo& job = jobs_[static_cast<size_t>(index)];
  if (job.cron || job.has_dates || job.released) return std::nullopt;
  return IntervalJobView{job.shard, job.interval, job.offset, job.paused != 0};
}

void TriggerExpectations::ForEachIntervalJob(const std::function<void(std::string_view, bool)>& fn) const {
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const JobInfo& job = jobs_[i];
    if (!job.cron && !job.has_dates && !job.released) fn(IdOf(i), job.paused != 0);
  }
}

void TriggerExpectations::Release(std::string_view id, std::vector<uint64_t>* seen_minutes) {
  const int64_t found = Find(id);
  if (found < 0 || !IntervalJobOf(id)) throw std::logic_error("Release: not a judged interval job");
  const size_t index = static_cast<size_t>(found);
  seen_minutes->assign((static_cast<size_t>(minutes_) + 63) / 64, 0);
  ForEachDueSlot(index, [&](int64_t, EpochMs) { --expected_; });
  for (int64_t k = 0; k < minutes_; ++k) {
    const uint64_t bit =
        static_cast<uint64_t>(index) * static_cast<uint64_t>(minutes_) + static_cast<uint64_t>(k);
    if (((seen_[bit / 64] >> (bit % 64)) & 1) == 0) continue;
    --arrived_;
    (*seen_minutes)[static_cast<size_t>(k) / 64] |= uint64_t{1} << (k % 64);
  }
  jobs_[index].released = 1;
}

double TriggerExpectations::expected_per_minute() const {
  const double minutes = static_cast<double>(last_ms_ - first_ms_ + 1) / 60'000.0;
  return minutes > 0 ? static_cast<double>(expected_) / minutes : 0;
}

}  // namespace belfry::loadtest
