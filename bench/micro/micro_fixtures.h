// Inputs shared by the micro benchmarks: belfry's default command rules and typical commands.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "belfry/command.h"
#include "core/command_parser.h"

namespace belfry::bench {

// The default configuration's rules (design.md): the 16 default intervals, 120 shards, 64 KiB
// details, every topic allowed except belfry's own. The object lives for the whole process.
const CommandRules& DefaultCommandRules();

// A project44 job object as a producer would send it (executionInterval, startDateTime, owner,
// key and a small jobDetails), for job number `n`.
std::string TypicalCommandValue(int n);

// A belfry upsert whose jobDetails object is about `details_bytes` long.
std::string LargeDetailsCommandValue(int n, size_t details_bytes);

// The Kafka message that would carry `value` for job `n` (key = the id the value names).
RawCommand TypicalRawCommand(int n, int64_t offset);

// `count` typical commands as one poll batch: mostly upserts, some repeats of the same id,
// deletes and pauses, in the proportions of a busy commands topic.
std::vector<RawCommand> MixedCommandBatch(int count);

}  // namespace belfry::bench
