#include "loadtest/trigger_expectations.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

#include "core/shard_hash.h"
#include "core/slot_math.h"

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
  const std::string sql = fmt::format(
      "COPY (SELECT id, shard, interval_minutes, offset_minutes, paused,"
      " floor(extract(epoch FROM start_at) * 1000)::bigint, floor(extract(epoch FROM end_at) * 1000)::bigint,"
      " topic FROM jobs WHERE left(topic, {}) = {}) TO STDOUT",
      topic_prefix.size(), SqlLiteral(topic_prefix));
  conn.CopyOut(sql, [&](std::string_view line) {
    const std::vector<std::string_view> f = SplitCopyRow(line);
    if (f.size() != 8) throw std::runtime_error("jobs table: unexpected COPY row");
    JobInfo job;
    job.shard = ParseNumber<int16_t>(f[1], "shard");
    job.interval = ParseNumber<int16_t>(f[2], "interval_minutes");
    job.offset = ParseNumber<int16_t>(f[3], "offset_minutes");
    job.paused = f[4] == "t" ? 1 : 0;
    const std::optional<EpochMs> start_at = ParseOptionalMs(f[5]);
    const std::optional<EpochMs> end_at = ParseOptionalMs(f[6]);
    if (job.interval <= 0) throw std::runtime_error("jobs table: interval_minutes must be positive");
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

bool TriggerExpectations::DueAt(size_t index, int64_t minute, EpochMs slot_ms) const {
  const JobInfo& job = jobs_[index];
  std::optional<EpochMs> start_at;
  std::optional<EpochMs> end_at;
  if (job.has_dates) {
    const Dates& d = dates_.at(static_cast<uint32_t>(index));
    start_at = d.start_at;
    end_at = d.end_at;
  }
  return IsDueAtSlot(job.interval, job.offset, start_at, end_at, job.paused != 0, minute, slot_ms);
}

template <typename Fn>
void TriggerExpectations::ForEachDueSlot(size_t index, Fn fn) const {
  const JobInfo& job = jobs_[index];
  if (job.paused) return;
  const int64_t last_minute = first_minute_ + minutes_ - 1;
  for (int64_t m = first_minute_ + PositiveMod(job.offset - first_minute_, job.interval); m <= last_minute;
       m += job.interval) {
    const EpochMs slot = SlotMs(m, job.shard, tick_ms_);
    if (slot >= first_ms_ && slot <= last_ms_ && DueAt(index, m, slot)) fn(m, slot);
  }
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
}

TriggerExpectations::Verdict TriggerExpectations::Record(std::string_view job_id, EpochMs scheduled_for_ms) {
  const int64_t index = Find(job_id);
  if (index < 0) return Verdict::kUnknownJob;
  if (scheduled_for_ms < first_ms_ || scheduled_for_ms > last_ms_) return Verdict::kOutsideWindow;
  const JobInfo& job = jobs_[static_cast<size_t>(index)];
  const int64_t minute = EpochMinuteOf(scheduled_for_ms);
  if (scheduled_for_ms != SlotMs(minute, job.shard, tick_ms_)) return Verdict::kNotDue;
  if (!DueAt(static_cast<size_t>(index), minute, scheduled_for_ms)) return Verdict::kNotDue;
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
  for (size_t i = 0; i < jobs_.size(); ++i) {
    ForEachDueSlot(i, [&](int64_t minute, EpochMs slot) {
      const uint64_t bit = static_cast<uint64_t>(i) * static_cast<uint64_t>(minutes_) +
                           static_cast<uint64_t>(minute - first_minute_);
      if ((seen_[bit / 64] >> (bit % 64)) & 1) return;
      ++missing;
      if (examples != nullptr && examples->size() < limit) examples->push_back({std::string(IdOf(i)), slot});
    });
  }
  return missing;
}

double TriggerExpectations::expected_per_minute() const {
  const double minutes = static_cast<double>(last_ms_ - first_ms_ + 1) / 60'000.0;
  return minutes > 0 ? static_cast<double>(expected_) / minutes : 0;
}

}  // namespace belfry::loadtest
