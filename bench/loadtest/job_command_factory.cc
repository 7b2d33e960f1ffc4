#include "loadtest/job_command_factory.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace belfry::loadtest {
namespace {

// Salts that make the cron draws of job n independent of its interval draw and of each other.
constexpr uint64_t kCronSalt = 0x63726f6e2d6a6f62ULL;        // "cron-job"
constexpr uint64_t kZoneSalt = 0x63726f6e2d7a6f6eULL;        // "cron-zon"
constexpr uint64_t kExpressionSalt = 0x63726f6e2d657870ULL;  // "cron-exp"

int Uniform(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

}  // namespace

std::string DrawCronExpression(std::mt19937_64& rng) {
  const int kind = Uniform(rng, 0, 99);
  const int minute = Uniform(rng, 0, 59);
  const int hour = Uniform(rng, 0, 23);
  if (kind < 35) return fmt::format("{} {} * * *", minute, hour);
  if (kind < 55) return fmt::format("{} {} * * 1-5", minute, hour);
  if (kind < 65) {
    int second = Uniform(rng, 0, 22);
    if (second >= hour) ++second;  // a different hour, uniform over the other 23
    return fmt::format("{} {},{} * * *", minute, std::min(hour, second), std::max(hour, second));
  }
  if (kind < 75) return fmt::format("{} * * * *", minute);
  if (kind < 85) return "*/15 * * * *";
  if (kind < 90) return "*/5 8-17 * * MON-FRI";
  if (kind < 95) return fmt::format("{} {} {} * *", minute, hour, Uniform(rng, 1, 28));
  return fmt::format("{} {} * * SUN", minute, hour);
}

double CronMixFiringsPerJobMinute() {
  // Per day of an average week: weekdays are 5 of 7 days, a month is 30.44 days.
  constexpr double kWeekdays = 5.0 / 7.0;
  const double per_day = 0.35 * 1 + 0.20 * kWeekdays + 0.10 * 2 + 0.10 * 24 + 0.10 * 96 +
                         0.05 * 120 * kWeekdays + 0.05 / 30.44 + 0.05 / 7;
  return per_day / 1440;
}

std::string JobCommandFactory::Id(uint64_t n) const { return fmt::format("{}{:010d}", spec_.id_prefix, n); }

bool JobCommandFactory::NumberOf(std::string_view id, uint64_t* n) const {
  if (id.size() <= spec_.id_prefix.size() || id.substr(0, spec_.id_prefix.size()) != spec_.id_prefix)
    return false;
  const std::string_view digits = id.substr(spec_.id_prefix.size());
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *n);
  return ec == std::errc() && p == digits.data() + digits.size();
}

std::string JobCommandFactory::Topic(uint64_t n) const {
  return fmt::format("{}{}", spec_.topic_prefix, Mix64(n) % static_cast<uint64_t>(spec_.topics));
}

std::vector<std::string> JobCommandFactory::Topics() const {
  std::vector<std::string> out;
  for (int32_t k = 0; k < spec_.topics; ++k) out.push_back(fmt::format("{}{}", spec_.topic_prefix, k));
  return out;
}

bool JobCommandFactory::IsCron(uint64_t n) const {
  if (!(spec_.cron_fraction > 0)) return false;
  // 53 bits of a hash salted apart from every other draw of n, as a uniform value in [0, 1).
  const double u = static_cast<double>(Mix64(n ^ kCronSalt) >> 11) * 0x1.0p-53;
  return u < spec_.cron_fraction;
}

std::string_view JobCommandFactory::CronZone(uint64_t n) const {
  if (!spec_.cron_zone.empty()) return spec_.cron_zone;
  const uint64_t zones = static_cast<uint64_t>(
      std::clamp<int32_t>(spec_.cron_zones, 1, static_cast<int32_t>(kCronZones.size())));
  return kCronZones[Mix64(n ^ kZoneSalt) % zones];
}

std::string JobCommandFactory::CronExpressionOf(uint64_t n, uint64_t version, bool reschedule) const {
  std::mt19937_64 cron_rng(Mix64((n ^ kExpressionSalt) * 0x9e3779b97f4a7c15ULL + (reschedule ? version : 0)));
  return DrawCronExpression(cron_rng);
}

std::string JobCommandFactory::Upsert(uint64_t n, uint64_t version, bool reschedule,
                                      std::mt19937_64& rng) const {
  // The schedule is a function of n (and of version when rescheduling), so a re-run of a seed
  // publishes the same jobs.
  std::string schedule;
  if (IsCron(n)) {
    schedule =
        fmt::format(R"("cron":"{}","timeZone":"{}")", CronExpressionOf(n, version, reschedule), CronZone(n));
  } else {
    std::mt19937_64 schedule_rng(Mix64(n * 0x9e3779b97f4a7c15ULL + (reschedule ? version : 0)));
    const int32_t interval = spec_.mix.Pick(schedule_rng);
    schedule = fmt::format(R"("intervalMinutes":{})", interval);
    if (spec_.explicit_offsets) {
      schedule += fmt::format(",\"offsetMinutes\":{}", schedule_rng() % static_cast<uint64_t>(interval));
    }
  }
  return UpsertWithSchedule(n, schedule, version, rng);
}

std::string JobCommandFactory::UpsertInterval(uint64_t n, int32_t interval, int32_t offset, uint64_t version,
                                              std::mt19937_64& rng) const {
  return UpsertWithSchedule(n, fmt::format(R"("intervalMinutes":{},"offsetMinutes":{})", interval, offset),
                            version, rng);
}

std::string JobCommandFactory::UpsertWithSchedule(uint64_t n, const std::string& schedule, uint64_t version,
                                                  std::mt19937_64& rng) const {
  const uint64_t owner = (Mix64(n) >> 16) % static_cast<uint64_t>(spec_.owners);
  return fmt::format(R"({{"op":"upsert","id":"{}","owner":"lt-owner-{}",{},"topic":"{}",)"
                     R"("key":"shipment-{}","jobDetails":{}}})",
                     Id(n), owner, schedule, Topic(n), n,
                     MakeJobDetails(n + (version << 40) + (rng() & 0xff), spec_.details_bytes));
}

std::string JobCommandFactory::Delete(uint64_t n) const {
  return fmt::format(R"({{"op":"delete","id":"{}"}})", Id(n));
}

std::string JobCommandFactory::Pause(uint64_t n) const {
  return fmt::format(R"({{"op":"pause","id":"{}"}})", Id(n));
}

std::string JobCommandFactory::Resume(uint64_t n) const {
  return fmt::format(R"({{"op":"resume","id":"{}"}})", Id(n));
}

}  // namespace belfry::loadtest
