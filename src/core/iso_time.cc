#include "core/iso_time.h"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>

#include "core/slot_math.h"

namespace belfry {
namespace {

constexpr int64_t kMsPerSecond = 1000;
constexpr int64_t kSecondsPerDay = 86'400;
constexpr int64_t kMsPerDay = kSecondsPerDay * kMsPerSecond;

constexpr bool IsLeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

constexpr int DaysInMonth(int64_t y, int m) {
  constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

// Howard Hinnant's days_from_civil: days since 1970-01-01 of the proleptic Gregorian date y-m-d.
constexpr int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct CivilDate {
  int64_t year;
  unsigned month;
  unsigned day;
};

// Howard Hinnant's civil_from_days, the inverse of DaysFromCivil.
constexpr CivilDate CivilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return CivilDate{y + (m <= 2 ? 1 : 0), m, d};
}

static_assert(DaysFromCivil(1970, 1, 1) == 0);
static_assert(DaysFromCivil(2000, 3, 1) == 11017);
static_assert(CivilFromDays(11017).year == 2000 && CivilFromDays(11017).month == 3);

// 9999-12-31T23:59:59.999Z, the last instant ParseIsoTime accepts (the first is the epoch).
constexpr EpochMs kLastAcceptedMs = DaysFromCivil(10000, 1, 1) * kMsPerDay - 1;
static_assert(kLastAcceptedMs == 253'402'300'799'999);

// A cursor over the text; every Read* consumes only on success.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  bool AtEnd() const { return pos_ == text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  bool ReadChar(char c) {
    if (AtEnd() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  // Exactly `n` ASCII digits.
  bool ReadDigits(int n, int* out) {
    if (text_.size() - pos_ < static_cast<size_t>(n)) return false;
    int v = 0;
    for (int i = 0; i < n; ++i) {
      const char c = text_[pos_ + i];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    pos_ += n;
    *out = v;
    return true;
  }

  // 1..9 digits of a decimal fraction, truncated to milliseconds.
  bool ReadFractionMs(int* ms) {
    int digits = 0;
    int value = 0;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      if (digits < 3) value = value * 10 + (Peek() - '0');
      ++digits;
      ++pos_;
    }
    if (digits < 1 || digits > 9) return false;
    for (int i = digits; i < 3; ++i) value *= 10;
    *ms = value;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<EpochMs> ParseIsoTime(std::string_view text) {
  Scanner s(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, ms = 0;
  if (!s.ReadDigits(4, &year) || !s.ReadChar('-') || !s.ReadDigits(2, &month) || !s.ReadChar('-') ||
      !s.ReadDigits(2, &day)) {
    return std::nullopt;
  }
  if (!s.ReadChar('T') && !s.ReadChar('t') && !s.ReadChar(' ')) return std::nullopt;
  if (!s.ReadDigits(2, &hour) || !s.ReadChar(':') || !s.ReadDigits(2, &minute) || !s.ReadChar(':') ||
      !s.ReadDigits(2, &second)) {
    return std::nullopt;
  }
  if (s.ReadChar('.') && !s.ReadFractionMs(&ms)) return std::nullopt;

  // No zone designator means UTC.
  int offset_minutes = 0;
  if (s.ReadChar('Z') || s.ReadChar('z')) {
    // UTC
  } else if (s.Peek() == '+' || s.Peek() == '-') {
    const int sign = s.Peek() == '-' ? -1 : 1;
    s.ReadChar(s.Peek());
    int oh = 0, om = 0;
    if (!s.ReadDigits(2, &oh) || !s.ReadChar(':') || !s.ReadDigits(2, &om)) return std::nullopt;
    if (oh > 23 || om > 59) return std::nullopt;
    offset_minutes = sign * (oh * 60 + om);
  }
  if (!s.AtEnd()) return std::nullopt;

  if (year < 1970 || year > 9999 || month < 1 || month > 12) return std::nullopt;
  if (day < 1 || day > DaysInMonth(year, month)) return std::nullopt;
  if (hour > 23 || minute > 59 || second > 59) return std::nullopt;

  const int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t seconds = days * kSecondsPerDay + hour * 3600 + minute * 60 + second;
  const EpochMs instant = seconds * kMsPerSecond + ms - static_cast<int64_t>(offset_minutes) * kMsPerMinute;
  // The zone can move a date at either end of the range outside it ("1970-01-01T00:30:00+01:00",
  // "9999-12-31T23:30:00-01:00"). The instant itself must be in range too, so that everything
  // accepted formats (always in UTC) to text that parses back to the same instant.
  if (instant < 0 || instant > kLastAcceptedMs) return std::nullopt;
  return instant;
}

namespace {

// Writes `v` as exactly `width` decimal digits. REQUIRES: 0 <= v < 10^width.
char* PutDigits(char* p, int64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return p + width;
}

}  // namespace

void AppendIsoTime(EpochMs ms, std::string* out) {
  const int64_t days = (ms - PositiveMod(ms, kMsPerDay)) / kMsPerDay;
  const int64_t in_day = PositiveMod(ms, kMsPerDay);
  const CivilDate date = CivilFromDays(days);
  const int64_t hour = in_day / 3'600'000;
  const int64_t minute = in_day / 60'000 % 60;
  const int64_t second = in_day / 1000 % 60;
  const int64_t milli = in_day % 1000;
  if (date.year < 0 || date.year > 9999) {  // never for a date belfry accepts; same text as fmt
    fmt::format_to(std::back_inserter(*out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", date.year,
                   date.month, date.day, hour, minute, second, milli);
    return;
  }
  // The hot path (every trigger's scheduledFor): fixed width, no allocation, no format parsing.
  char buf[24];
  char* p = PutDigits(buf, date.year, 4);
  *p++ = '-';
  p = PutDigits(p, date.month, 2);
  *p++ = '-';
  p = PutDigits(p, date.day, 2);
  *p++ = 'T';
  p = PutDigits(p, hour, 2);
  *p++ = ':';
  p = PutDigits(p, minute, 2);
  *p++ = ':';
  p = PutDigits(p, second, 2);
  *p++ = '.';
  p = PutDigits(p, milli, 3);
  *p++ = 'Z';
  out->append(buf, static_cast<size_t>(p - buf));
}

std::string FormatIsoTime(EpochMs ms) {
  std::string out;
  AppendIsoTime(ms, &out);
  return out;
}

}  // namespace belfry
