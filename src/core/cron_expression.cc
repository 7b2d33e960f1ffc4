#include "core/cron_expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/message_quote.h"

namespace belfry {
namespace {

constexpr size_t kMaxCronBytes = 256;
constexpr size_t kFieldCount = 5;
// Numbers with more digits than this are shown by their length only (they are out of range anyway).
constexpr size_t kMaxShownDigits = 9;

constexpr std::array<std::string_view, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> kWeekdayNames = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

struct FieldSpec {
  std::string_view name;
  unsigned min;
  unsigned max;   // the largest value the text may name (7 for day-of-week: Sunday again)
  unsigned last;  // where "*" and "a/n" end (6 for day-of-week)
  std::span<const std::string_view> names;  // names[i] stands for min + i
};

constexpr std::array<FieldSpec, kFieldCount> kFields = {{
    {"minute", 0, 59, 59, {}},
    {"hour", 0, 23, 23, {}},
    {"day-of-month", 1, 31, 31, {}},
    {"month", 1, 12, 12, kMonthNames},
    {"day-of-week", 0, 7, 6, kWeekdayNames},
}};

struct Macro {
  std::string_view name;
  std::string_view expansion;
};

constexpr std::array<Macro, 7> kMacros = {{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

// A blank-separated word of the expression: its offset in the whole text and its bytes.
struct Token {
  size_t offset;
  std::string_view text;
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// Bytes that may appear anywhere in the text: printable ASCII, and tab as a separator.
bool IsAllowedByte(char c) {
  const auto b = static_cast<unsigned char>(c);
  return c == '\t' || (b >= 0x20 && b < 0x7f);
}

char ToLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

std::vector<Token> SplitFields(std::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    if (IsBlank(text[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < text.size() && !IsBlank(text[i])) ++i;
    tokens.push_back({start, text.substr(start, i - start)});
  }
  return tokens;
}

std::string Quote(std::string_view text) { return QuoteForMessage(text, kMaxEchoBytes); }

Status Reject(std::string_view text, std::string_view detail) {
  return Status::Invalid("invalid_cron", fmt::format("cron {}: {}", Quote(text), detail));
}
// `position` is a 0-based offset into `text`; messages count from 1.
Status RejectAt(std::string_view text, size_t position, std::string_view detail) {
  return Reject(text, fmt::format("at position {}: {}", position + 1, detail));
}
Status RejectField(std::string_view text, const FieldSpec& spec, size_t position, std::string_view detail) {
  return Reject(text, fmt::format("{} field at position {}: {}", spec.name, position + 1, detail));
}

// The character at text[i] (a whole UTF-8 sequence when well-formed), quoted.
std::string QuoteCharAt(std::string_view text, size_t i) {
  const size_t len = Utf8SequenceLength(text, i);
  return Quote(text.substr(i, len == 0 ? 1 : len));
}

std::string DescribeBadByte(std::string_view text, size_t i) {
  const auto b = static_cast<unsigned char>(text[i]);
  if (b >= 0x80) return fmt::format("non-ASCII character {} is not allowed", QuoteCharAt(text, i));
  return fmt::format("control character {} is not allowed", QuoteCharAt(text, i));
}

// A run of digits of any length; `value` is exact iff digits <= kMaxShownDigits.
struct Number {
  unsigned long long value = 0;
  size_t digits = 0;  // significant digits (leading zeros not counted)
};

Number ReadNumber(std::string_view text, size_t* pos, size_t end) {
  Number n;
  while (*pos < end && IsDigit(text[*pos])) {
    const unsigned digit = static_cast<unsigned>(text[*pos] - '0');
    if (n.digits > 0 || digit != 0) ++n.digits;
    if (n.digits <= kMaxShownDigits) n.value = n.value * 10 + digit;
    ++*pos;
  }
  return n;
}

std::string ShowNumber(const Number& n) {
  if (n.digits > kMaxShownDigits) return fmt::format("a {}-digit number", n.digits);
  return fmt::format("{}", n.value);
}

bool InRange(const Number& n, unsigned min, unsigned max) {
  return n.digits <= kMaxShownDigits && n.value >= min && n.value <= max;
}

// Parses one field, text[begin, end) (a non-empty token), into bits indexed by value.
class FieldParser final {
 public:
  FieldParser(std::string_view text, const FieldSpec& spec, size_t begin, size_t end)
      : text_(text), spec_(spec), pos_(begin), end_(end) {}

  // Ok with `bits` set, or invalid_cron for the first error.
  Status Parse(std::bitset<64>* bits) {
    while (true) {
      if (AtEnd() || Peek() == ',') return Error(pos_, "empty list item");
      if (Status s = ParseItem(bits); !s.ok()) return s;
      if (AtEnd()) return Status::Ok();
      if (Peek() != ',') return Error(pos_, fmt::format("unexpected {}", QuoteCharAt(text_, pos_)));
      ++pos_;
    }
  }

 private:
  bool AtEnd() const { return pos_ >= end_; }
  char Peek() const { return text_[pos_]; }

  Status Error(size_t position, std::string_view detail) const {
    return RejectField(text_, spec_, position, detail);
  }

  std::string ValidValues() const {
    if (spec_.names.empty()) return fmt::format("{}-{}", spec_.min, spec_.max);
    return fmt::format("{}-{} or {}-{}", spec_.min, spec_.max, spec_.names.front(), spec_.names.back());
  }

  // A number or a name at pos_, checked against the field's range.
  Status ParseValue(unsigned* value) {
    const size_t start = pos_;
    if (AtEnd()) return Error(start, fmt::format("expected a value ({})", ValidValues()));
    if (IsDigit(Peek())) {
      const Number n = ReadNumber(text_, &pos_, end_);
      if (!InRange(n, spec_.min, spec_.max)) {
        return Error(start, fmt::format("{} is outside {}-{}", ShowNumber(n), spec_.min, spec_.max));
      }
      *value = static_cast<unsigned>(n.value);
      return Status::Ok();
    }
    if (IsLetter(Peek())) {
      while (!AtEnd() && IsLetter(Peek())) ++pos_;
      const std::string_view word = text_.substr(start, pos_ - start);
      if (spec_.names.empty()) {
        return Error(start,
                     fmt::format("{} is not a number ({} takes {})", Quote(word), spec_.name, ValidValues()));
      }
      for (size_t i = 0; i < spec_.names.size(); ++i) {
        if (EqualsIgnoreCase(word, spec_.names[i])) {
          *value = spec_.min + static_cast<unsigned>(i);
          return Status::Ok();
        }
      }
      return Error(start,
                   fmt::format("unknown name {} ({} takes {})", Quote(word), spec_.name, ValidValues()));
    }
    return Error(
        start, fmt::format("unexpected {}, expected a value ({})", QuoteCharAt(text_, start), ValidValues()));
  }

  // One list item: "*", "a", "a-b", each optionally followed by "/step".
  Status ParseItem(std::bitset<64>* bits) {
    const size_t start = pos_;
    unsigned lo = spec_.min;
    unsigned hi = spec_.last;
    bool single = false;
    if (Peek() == '*') {
      ++pos_;
    } else {
      if (Status s = ParseValue(&lo); !s.ok()) return s;
      hi = lo;
      single = true;
      if (!AtEnd() && Peek() == '-') {
        ++pos_;
        if (AtEnd() || Peek() == ',' || Peek() == '/') return Error(pos_, "missing the end of the range");
        if (Status s = ParseValue(&hi); !s.ok()) return s;
        single = false;
        if (lo > hi) {
          return Error(start, fmt::format("range {} is reversed (write the smaller value first)",
                                          Quote(text_.substr(start, pos_ - start))));
        }
      }
    }
    unsigned step = 1;
    if (!AtEnd() && Peek() == '/') {
      ++pos_;
      const size_t step_start = pos_;
      if (AtEnd() || !IsDigit(Peek())) {
        if (AtEnd() || Peek() == ',') return Error(step_start, "missing the step after '/'");
        return Error(step_start,
                     fmt::format("the step must be a number, not {}", QuoteCharAt(text_, step_start)));
      }
      const Number n = ReadNumber(text_, &pos_, end_);
      const unsigned span = spec_.last - spec_.min + 1;
      if (n.digits == 0) return Error(step_start, "step 0 is not allowed");
      if (!InRange(n, 1, span)) {
        return Error(step_start,
                     fmt::format("step {} is larger than the field's span ({} values)", ShowNumber(n), span));
      }
      step = static_cast<unsigned>(n.value);
      // "a/n" runs from a to the field's end (day-of-week "7/n" is Sunday alone).
      if (single) hi = std::max(lo, spec_.last);
    }
    for (unsigned v = lo; v <= hi; v += step) bits->set(v);
    return Status::Ok();
  }

  std::string_view text_;
  const FieldSpec& spec_;
  size_t pos_;
  size_t end_;
};

template <size_t N>
std::bitset<N> Narrow(const std::bitset<64>& bits) {
  std::bitset<N> out;
  for (size_t i = 0; i < N; ++i) out[i] = bits[i];
  return out;
}

// The five fields of `tokens` (REQUIRES: tokens.size() == kFieldCount), positions relative to `text`.
StatusOr<CronExpression> ParseFields(std::string_view text, const std::vector<Token>& tokens) {
  std::array<std::bitset<64>, kFieldCount> bits;
  for (size_t f = 0; f < kFieldCount; ++f) {
    FieldParser parser(text, kFields[f], tokens[f].offset, tokens[f].offset + tokens[f].text.size());
    if (Status s = parser.Parse(&bits[f]); !s.ok()) return s;
  }
  CronExpression cron;
  cron.minutes = Narrow<60>(bits[0]);
  cron.hours = Narrow<24>(bits[1]);
  cron.days_of_month = Narrow<32>(bits[2]);
  cron.months = Narrow<13>(bits[3]);
  cron.days_of_week = Narrow<7>(bits[4]);
  if (bits[4][7]) cron.days_of_week.set(0);
  cron.hour_star = tokens[1].text == "*";
  cron.dom_star = tokens[2].text.front() == '*';
  cron.dow_star = tokens[4].text.front() == '*';
  for (const Token& token : tokens) {
    if (!cron.normalized.empty()) cron.normalized += ' ';
    cron.normalized += token.text;
  }
  return cron;
}

StatusOr<CronExpression> ParseMacro(std::string_view text, const std::vector<Token>& tokens) {
  const Token& name = tokens.front();
  for (const Macro& macro : kMacros) {
    if (!EqualsIgnoreCase(name.text, macro.name)) continue;
    if (tokens.size() > 1) {
      return RejectAt(text, tokens[1].offset,
                      fmt::format("unexpected text after {} (a macro stands alone)", macro.name));
    }
    return ParseFields(macro.expansion, SplitFields(macro.expansion));
  }
  return RejectAt(text, name.offset,
                  fmt::format("unknown macro {} (known: @yearly, @annually, @monthly, @weekly, @daily, "
                              "@midnight, @hourly)",
                              Quote(name.text)));
}

}  // namespace

StatusOr<CronExpression> ParseCronExpression(std::string_view text) {
  if (text.size() > kMaxCronBytes) {
    return Reject(text, fmt::format("{} bytes, at most {} allowed", text.size(), kMaxCronBytes));
  }
  const std::vector<Token> tokens = SplitFields(text);
  const bool macro = !tokens.empty() && tokens.front().text.front() == '@';

  // Control and non-ASCII characters first, so that a stray newline or NBSP is named as such
  // instead of showing up as a wrong field count.
  for (size_t i = 0; i < text.size(); ++i) {
    if (IsAllowedByte(text[i])) continue;
    size_t field = 0;
    while (field + 1 < tokens.size() && tokens[field + 1].offset <= i) ++field;
    if (macro || field >= kFieldCount) return RejectAt(text, i, DescribeBadByte(text, i));
    return RejectField(text, kFields[field], i, DescribeBadByte(text, i));
  }

  if (macro) return ParseMacro(text, tokens);
  if (tokens.size() != kFieldCount) {
    std::string detail =
        fmt::format("found {} field{}, expected 5 (minute hour day-of-month month day-of-week)",
                    tokens.size(), tokens.size() == 1 ? "" : "s");
    if (tokens.size() > kFieldCount) {
      detail += fmt::format("; the extra text starts at position {}", tokens[kFieldCount].offset + 1);
    }
    return Reject(text, detail);
  }
  return ParseFields(text, tokens);
}

bool CronDayMatches(const CronExpression& cron, unsigned month, unsigned day, unsigned weekday) {
  if (!cron.months[month]) return false;
  const bool dom = cron.days_of_month[day];
  const bool dow = cron.days_of_week[weekday];
  if (!cron.dom_star && !cron.dow_star) return dom || dow;
  return dom && dow;
}

bool CronCanEverMatch(const CronExpression& cron) {
  // With the OR rule every weekday of every month comes round, so the weekday field alone fires.
  if (!cron.dom_star && !cron.dow_star) return cron.days_of_week.any() && cron.months.any();
  // With AND, every (month, day) that exists falls on every weekday some year; only the pair matters.
  constexpr std::array<unsigned, 13> kMaxDays = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (cron.days_of_week.none()) return false;
  for (unsigned month = 1; month <= 12; ++month) {
    if (!cron.months[month]) continue;
    for (unsigned day = 1; day <= kMaxDays[month]; ++day) {
      if (cron.days_of_month[day]) return true;
    }
  }
  return false;
}

}  // namespace belfry
