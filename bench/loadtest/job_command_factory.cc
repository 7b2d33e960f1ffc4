#include "loadtest/job_command_factory.h"

#include <fmt/format.h>

#include <charconv>

namespace belfry::loadtest {

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

std::string JobCommandFactory::Upsert(uint64_t n, uint64_t version, bool reschedule,
                                      std::mt19937_64& rng) const {
  // The schedule is a function of n (and of version when rescheduling), so a re-run of a seed
  // publishes the same jobs.
  std::mt19937_64 schedule_rng(Mix64(n * 0x9e3779b97f4a7c15ULL + (reschedule ? version : 0)));
  const int32_t interval = spec_.mix.Pick(schedule_rng);
  std::string offset;
  if (spec_.explicit_offsets) {
    offset = fmt::format(",\"offsetMinutes\":{}", schedule_rng() % static_cast<uint64_t>(interval));
  }
  const uint64_t owner = (Mix64(n) >> 16) % static_cast<uint64_t>(spec_.owners);
  return fmt::format(R"({{"op":"upsert","id":"{}","owner":"lt-owner-{}","intervalMinutes":{}{},"topic":"{}",)"
                     R"("key":"shipment-{}","jobDetails":{}}})",
                     Id(n), owner, interval, offset, Topic(n), n,
                     MakeJobDetails(n + (version << 40) + (rng() & 0xff), spec_.details_bytes));
}

std::string JobCommandFactory::Delete(uint64_t n) const {
  return fmt::format(R"({{"op":"delete","id":"{}"}})", Id(n));
}

}  // namespace belfry::loadtest
