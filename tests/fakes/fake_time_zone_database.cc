#include "fakes/fake_time_zone_database.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace belfry {
namespace {

// Far outside years 0..9999 either way, as a real zone's first and last periods are.
constexpr int64_t kForever = int64_t{1} << 50;

class FakeTimeZone final : public TimeZone {
 public:
  FakeTimeZone(int32_t initial_offset_seconds, std::vector<FakeTimeZoneDatabase::Change> changes)
      : initial_(initial_offset_seconds), changes_(std::move(changes)) {}

  OffsetPeriod PeriodAt(int64_t utc_seconds) const override {
    const auto next =
        std::upper_bound(changes_.begin(), changes_.end(), utc_seconds,
                         [](int64_t t, const FakeTimeZoneDatabase::Change& c) { return t < c.at; });
    OffsetPeriod p;
    p.begin = next == changes_.begin() ? -kForever : std::prev(next)->at;
    p.end = next == changes_.end() ? kForever : next->at;
    p.offset_seconds = next == changes_.begin() ? initial_ : std::prev(next)->offset_seconds;
    return p;
  }

 private:
  const int32_t initial_;
  const std::vector<FakeTimeZoneDatabase::Change> changes_;
};

}  // namespace

void FakeTimeZoneDatabase::Add(const std::string& name, int32_t initial_offset_seconds,
                               std::vector<Change> changes) {
  zones_[name] = std::make_unique<const FakeTimeZone>(initial_offset_seconds, std::move(changes));
}

const TimeZone* FakeTimeZoneDatabase::Find(std::string_view name) const {
  const auto it = zones_.find(name);
  return it == zones_.end() ? nullptr : it->second.get();
}

}  // namespace belfry
