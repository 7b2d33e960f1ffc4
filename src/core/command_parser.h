// CommandParser: turns a raw Kafka message from the commands topic into a validated Command, or
// a rejection Status (Code::kInvalid) whose reason() is a stable machine-readable code used as
// a metric label and in the DLQ's belfry-error header ("<reason>: <message>").
#pragma once

#include <cstdint>
#include <vector>

#include "belfry/command.h"
#include "belfry/status.h"
#include "core/one_shot_placement.h"
#include "core/time_zone_database.h"
#include "core/topic_policy.h"

namespace belfry {

struct CommandRules {
  std::vector<int32_t> intervals;  // allowed interval minutes
  int32_t shard_count = 120;
  int64_t max_details_bytes = 64 * 1024;  // minified jobDetails
  int64_t max_command_bytes = 256 * 1024;  // whole message value
  const TopicPolicy* topic_policy = nullptr;  // REQUIRED (non-null)
  const TimeZoneDatabase* time_zones = nullptr;  // REQUIRED (non-null): calendar jobs' zones
  OneShotRules one_shot;  // tick, catch-up window and misfire policy, for one-shot placement
};

// Never throws, never crashes, for any input bytes. Thread-safe (no shared mutable state).
StatusOr<Command> ParseCommand(const RawCommand& raw, const CommandRules& rules);

}  // namespace belfry
