// JobCommandFactory: the commands the harness publishes to belfry.commands, as a producer
// service would write them: project44-style JSON with intervalMinutes, an explicit random
// offsetMinutes (so a bulk seed spreads over every offset instead of piling onto the minute it
// was published in), topic lt.triggers.<k>, an owner and ~200 bytes of jobDetails.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "loadtest/workload.h"

namespace belfry::loadtest {

struct JobCommandSpec {
  std::string id_prefix = "lt-";
  std::string topic_prefix = "lt.triggers.";
  int32_t topics = 16;
  int32_t owners = 8;
  size_t details_bytes = 200;
  bool explicit_offsets = true;  // false: let belfry derive the offset from the message time
  IntervalMix mix = IntervalMix::Parse(kDefaultIntervalMix);
};

class JobCommandFactory final {
 public:
  explicit JobCommandFactory(JobCommandSpec spec) : spec_(std::move(spec)) {}

  // "<prefix><n>", zero-padded to 10 digits so ids sort by number.
  std::string Id(uint64_t n) const;
  // The job's number, if `id` is one of this factory's ids.
  bool NumberOf(std::string_view id, uint64_t* n) const;
  std::string Topic(uint64_t n) const;
  std::vector<std::string> Topics() const;

  // An upsert of job n. `version` changes the details (and, with `reschedule`, the interval
  // and offset) so that updates differ from creates.
  std::string Upsert(uint64_t n, uint64_t version, bool reschedule, std::mt19937_64& rng) const;
  std::string Delete(uint64_t n) const;

  const JobCommandSpec& spec() const { return spec_; }

 private:
  const JobCommandSpec spec_;
};

}  // namespace belfry::loadtest
