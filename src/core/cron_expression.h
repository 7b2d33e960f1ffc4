// CronExpression: a standard 5-field cron expression (minute hour day-of-month month
// day-of-week), parsed into bit sets. Pure: no clock, no zones. The time-zone side of calendar
// schedules lives in core/calendar_schedule.h. Rules: docs/calendar-schedules.md.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>

#include "belfry/status.h"

namespace belfry {

struct CronExpression {
  std::bitset<60> minutes;        // 0..59
  std::bitset<24> hours;          // 0..23
  std::bitset<32> days_of_month;  // 1..31 (bit 0 unused)
  std::bitset<13> months;         // 1..12 (bit 0 unused)
  std::bitset<7> days_of_week;    // 0..6, 0 = Sunday (7 in the text is Sunday too)
  // Vixie cron's flags: the field's text begins with '*' ("*", "*/2"). When neither day field is
  // a star, a day matches if either day field matches; otherwise both must (a star matches all).
  bool dom_star = false;
  bool dow_star = false;
  // The hour field is exactly "*" (also after a macro: @hourly). Such an expression fires by real
  // time across DST transitions: see docs/calendar-schedules.md.
  bool hour_star = false;
  // The five fields after macro expansion, single-space separated ("0 9 * * 1-5"): the text
  // belfry stores and shows. Canonical only in spacing; names and case are kept as given.
  std::string normalized;

  bool operator==(const CronExpression&) const = default;
};

// Parses `text`. Accepts, per field: "*", numbers, names (months JAN-DEC, weekdays SUN-SAT,
// case-insensitive, also as range ends), ranges "a-b", lists "a,b,c", steps "*/n", "a-b/n" and
// "a/n" (= a to the field's maximum, step n); day-of-week 7 means Sunday ("5-7" is Friday to
// Sunday), but "*" and "a/n" end at Saturday (6), and its span is 7 values. Macros: @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly. Fields are separated by spaces or
// tabs; leading and trailing blanks are ignored. Text is at most 256 bytes.
//
// On error returns Status::Invalid("invalid_cron", message) where the message names the field
// ("minute", "hour", "day-of-month", "month", "day-of-week") and the 1-based character position
// in the given text, e.g. `cron "0 25 * * *": hour field at position 3: 25 is outside 0-23`.
// User text is echoed only through core/message_quote.h (QuoteForMessage). Rejects: wrong field
// count, empty list items, values out of range, reversed ranges (a > b), step 0 or a step larger
// than the field's span (the number of distinct values: "*/60" is a valid minute field, "*/61" is
// not), unknown names, unknown macros (@reboot included), non-ASCII or control characters (tab
// separates fields; a newline is rejected). Never throws, for any input bytes.
StatusOr<CronExpression> ParseCronExpression(std::string_view text);

// True iff a local calendar day matches the day fields (day-of-month, month, day-of-week) under
// Vixie cron's rule. REQUIRES: 1 <= month <= 12, 1 <= day <= 31, 0 <= weekday <= 6 (0 = Sunday).
bool CronDayMatches(const CronExpression& cron, unsigned month, unsigned day, unsigned weekday);

// False iff no calendar date can ever match the day fields, e.g. "0 0 30 2 *" or "0 0 31 4 *"
// (February has at most 29 days; a restricted weekday field never saves a date whose
// day-of-month cannot exist when both fields are ANDed). With the OR rule (neither day field a
// star) it is always true. Every other expression fires at least once in every 40-year window:
// the worst case is 29 February on one weekday, e.g. "0 0 29 2 */7" (Sundays) fires in 2088 and
// next in 2128, as 2100 is not a leap year; any other date meets each weekday within 12 years.
bool CronCanEverMatch(const CronExpression& cron);

}  // namespace belfry
