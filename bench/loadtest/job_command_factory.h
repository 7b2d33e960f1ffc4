// JobCommandFactory: the commands the harness publishes to belfry.commands, as a producer
// service would write them: project44-style JSON with intervalMinutes, an explicit random
// offsetMinutes (so a bulk seed spreads over every offset instead of piling onto the minute it
// was published in), topic lt.triggers.<k>, an owner and ~200 bytes of jobDetails.
//
// A fraction of the jobs (JobCommandSpec::cron_fraction) are calendar jobs instead: "cron" and
// "timeZone" in place of intervalMinutes/offsetMinutes, everything else the same. Which jobs,
// their zones and their expressions are functions of the job number alone (DrawCronExpression).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "loadtest/workload.h"

namespace belfry::loadtest {

// The zones cron jobs are spread over, chosen for variety: no DST (UTC, Asia/Kolkata +5:30,
// Asia/Kathmandu +5:45, Asia/Tokyo, America/Sao_Paulo, Asia/Tehran +3:30, Asia/Shanghai),
// northern DST at 1:00 UTC (Europe/*), at 2:00 local (America/*), southern DST (Australia/Sydney,
// Pacific/Auckland, America/Santiago, which changes at midnight), a 30-minute DST
// (Australia/Lord_Howe), quarter-hour offsets with DST (Pacific/Chatham +12:45/+13:45,
// America/St_Johns -3:30), transitions at midnight (Africa/Cairo, America/Havana) and a negative
// DST in the tz source (Europe/Dublin). A prefix of the list mixes DST and fixed zones.
inline constexpr std::array<std::string_view, 20> kCronZones = {
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Europe/London",
    "Asia/Kolkata",
    "Australia/Sydney",
    "Asia/Tokyo",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "America/Sao_Paulo",
    "Pacific/Chatham",
    "America/Santiago",
    "Africa/Cairo",
    "America/Los_Angeles",
    "Pacific/Auckland",
    "America/St_Johns",
    "Europe/Dublin",
    "Asia/Tehran",
    "America/Havana",
    "Asia/Shanghai",
};

struct JobCommandSpec {
  std::string id_prefix = "lt-";
  std::string topic_prefix = "lt.triggers.";
  int32_t topics = 16;
  int32_t owners = 8;
  size_t details_bytes = 200;
  bool explicit_offsets = true;  // false: let belfry derive the offset from the message time
  IntervalMix mix = IntervalMix::Parse(kDefaultIntervalMix);
  // Job n is a cron job iff a hash of n (independent of the interval draw) is below this.
  double cron_fraction = 0;
  // Cron jobs use the first `cron_zones` of kCronZones. REQUIRES: 1..kCronZones.size().
  int32_t cron_zones = 20;
  // Non-empty: every cron job is in this one zone instead (e.g. a whole fleet in one zone, to
  // measure the transition that moves all of it).
  std::string cron_zone;
};

// The cron expressions, a realistic mix drawn per job (minutes M, hours H, day D uniform):
//   35% daily at a local time             "M H * * *"
//   20% weekdays                          "M H * * 1-5"
//   10% twice a day                       "M H1,H2 * * *"   (H1 < H2)
//   10% hourly at minute M (real time)    "M * * * *"
//   10% every 15 minutes                  "*/15 * * * *"
//    5% business hours, every 5 minutes   "*/5 8-17 * * MON-FRI"
//    5% monthly                           "M H D * *"       (D in 1..28)
//    5% weekly                            "M H * * SUN"
std::string DrawCronExpression(std::mt19937_64& rng);

// The mean fires per minute of one job of that mix, over an average week.
double CronMixFiringsPerJobMinute();

class JobCommandFactory final {
 public:
  explicit JobCommandFactory(JobCommandSpec spec) : spec_(std::move(spec)) {}

  // "<prefix><n>", zero-padded to 10 digits so ids sort by number.
  std::string Id(uint64_t n) const;
  // The job's number, if `id` is one of this factory's ids.
  bool NumberOf(std::string_view id, uint64_t* n) const;
  std::string Topic(uint64_t n) const;
  std::vector<std::string> Topics() const;

  // True iff job n is a calendar (cron) job.
  bool IsCron(uint64_t n) const;
  // A cron job's zone, one of the first spec().cron_zones of kCronZones.
  std::string_view CronZone(uint64_t n) const;
  // A cron job's expression; `version` re-draws it when `reschedule` is set.
  std::string CronExpressionOf(uint64_t n, uint64_t version, bool reschedule) const;

  // An upsert of job n. `version` changes the details (and, with `reschedule`, the interval
  // and offset, or a cron job's expression) so that updates differ from creates.
  std::string Upsert(uint64_t n, uint64_t version, bool reschedule, std::mt19937_64& rng) const;
  // An upsert of interval job n with this interval and explicit offset (churn's updates choose
  // both); otherwise as Upsert.
  std::string UpsertInterval(uint64_t n, int32_t interval, int32_t offset, uint64_t version,
                             std::mt19937_64& rng) const;
  std::string Delete(uint64_t n) const;
  std::string Pause(uint64_t n) const;
  std::string Resume(uint64_t n) const;

  const JobCommandSpec& spec() const { return spec_; }

 private:
  // The upsert of job n with `schedule` (the JSON members that say when it fires).
  std::string UpsertWithSchedule(uint64_t n, const std::string& schedule, uint64_t version,
                                 std::mt19937_64& rng) const;

  const JobCommandSpec spec_;
};

}  // namespace belfry::loadtest
