// libFuzzer target for ParseCronExpression: the input is the expression's text, any bytes.
// Every rejection and every accepted expression must satisfy the invariants below; a violation
// traps.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/cron_expression.h"
#include "fuzz_checks.h"

namespace {

using belfry::CronExpression;
using belfry::StatusOr;
using belfry::fuzz::Check;
using belfry::fuzz::CheckRejection;

bool IsPrintableAscii(std::string_view s) {
  for (const char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

void CheckAccepted(std::string_view input, const CronExpression& cron) {
  Check(input.size() <= 256);
  Check(cron.minutes.any() && cron.hours.any() && cron.days_of_month.any() && cron.months.any() &&
        cron.days_of_week.any());
  Check(!cron.days_of_month[0] && !cron.months[0]);  // unused bits

  // Five single-space separated fields of printable ASCII.
  const std::string_view n = cron.normalized;
  Check(!n.empty() && IsPrintableAscii(n) && n.front() != ' ' && n.back() != ' ');
  Check(n.find("  ") == std::string_view::npos);
  size_t spaces = 0;
  for (const char c : n) spaces += c == ' ';
  Check(spaces == 4);
  Check(cron.hour_star == (n.substr(n.find(' ') + 1, 2) == "* "));

  const StatusOr<CronExpression> again = belfry::ParseCronExpression(cron.normalized);
  Check(again.ok() && again.value() == cron);

  // Vixie's rule and the can-ever-match answer agree: when some existing date matches the day
  // fields on some weekday, CronCanEverMatch is true.
  constexpr unsigned kMaxDays[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool some_day = false;
  for (unsigned month = 1; month <= 12 && !some_day; ++month) {
    for (unsigned day = 1; day <= kMaxDays[month] && !some_day; ++day) {
      for (unsigned weekday = 0; weekday < 7 && !some_day; ++weekday) {
        some_day = belfry::CronDayMatches(cron, month, day, weekday);
      }
    }
  }
  Check(some_day == belfry::CronCanEverMatch(cron));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const StatusOr<CronExpression> result = belfry::ParseCronExpression(input);
  if (result.ok()) {
    CheckAccepted(input, result.value());
  } else {
    CheckRejection(result.status());
    Check(result.status().reason() == "invalid_cron");
  }
  return 0;
}
