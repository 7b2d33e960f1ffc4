#include "micro/micro_fixtures.h"

#include <fmt/format.h>

#include <optional>

#include "core/topic_policy.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry::bench {
namespace {

constexpr EpochMs kMessageTimestamp = 1'795'871'262'123;  // 2026-11-22T...Z

const char* const kIntervals[] = {"EVERY_MINUTE", "EVERY_5_MINUTES", "EVERY_15_MINUTES",
                                  "EVERY_HOUR",   "EVERY_6_HOURS",   "EVERY_24_HOURS"};

std::string JobId(int n) { return fmt::format("shipment-{}-poll", n); }

}  // namespace

const CommandRules& DefaultCommandRules() {
  static const TopicPolicy* const policy =
      new TopicPolicy({"*"}, {"belfry.commands", "belfry.commands.dlq", "belfry.command-results"});
  static const CommandRules* const rules = [] {
    auto* r = new CommandRules;
    r->intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
    r->shard_count = 120;
    r->max_details_bytes = 64 * 1024;
    r->max_command_bytes = 256 * 1024;
    r->topic_policy = policy;
    r->time_zones = &SystemTimeZones();
    return r;
  }();
  return *rules;
}

std::string TypicalCommandValue(int n) {
  return fmt::format(R"({{"id": "{}", "owner": "tracking-svc", "startDateTime": "2026-11-22T13:00:00Z", )"
                     R"("endDateTime": null, "executionInterval": "{}", "topic": "tracking.poll", )"
                     R"("key": "shipment-{}", "jobDetails": {{"shipmentId": {}, "carrier": "ACME-FREIGHT", )"
                     R"("mode": "TL", "reference": "PO-{:08d}"}}}})",
                     JobId(n), kIntervals[n % 6], n, n, n * 7);
}

std::string LargeDetailsCommandValue(int n, size_t details_bytes) {
  std::string details = fmt::format(R"({{"shipmentId": {}, "stops": [)", n);
  int stop = 0;
  while (details.size() + 2 < details_bytes) {
    if (stop > 0) details.push_back(',');
    details +=
        fmt::format(R"({{"seq": {}, "city": "Chicago", "eta": "2026-11-2{}T1{}:00:00Z", "n": "Dock {}"}})",
                    stop, stop % 10, stop % 10, stop);
    ++stop;
  }
  details.append("]}");
  return fmt::format(R"({{"op": "upsert", "id": "{}", "intervalMinutes": 15, "topic": "tracking.poll", )"
                     R"("jobDetails": {}}})",
                     JobId(n), details);
}

RawCommand TypicalRawCommand(int n, int64_t offset) {
  RawCommand raw;
  raw.key = JobId(n);
  raw.value = TypicalCommandValue(n);
  raw.source = SourcePosition{static_cast<int32_t>(n % 8), offset, kMessageTimestamp};
  return raw;
}

std::vector<RawCommand> MixedCommandBatch(int count) {
  std::vector<RawCommand> batch;
  batch.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    // 80% upserts of fresh ids, 10% repeated upserts, 5% deletes, 5% pauses.
    const int n = (i % 10 == 9) ? i - 5 : i;
    RawCommand raw = TypicalRawCommand(n, 1000 + i);
    if (i % 20 == 7) {
      raw.value = fmt::format(R"({{"op": "delete", "id": "{}"}})", *raw.key);
    } else if (i % 20 == 13) {
      raw.value = fmt::format(R"({{"op": "pause", "id": "{}"}})", *raw.key);
    }
    batch.push_back(std::move(raw));
  }
  return batch;
}

}  // namespace belfry::bench
