// What the `belfry` subcommands (cli_*_commands.cc) share: how they fail, how they publish a
// command and wait for its outcome, and where they read the shard layout.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/cli_commands.h"
#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/shard_layout.h"
#include "belfry/status.h"

namespace belfry {

// Prints "belfry: <message>" on stderr and returns `code`, the exit code.
int Fail(const std::string& message, int code = 1);

// --label key=value terms into `labels` (a JSON object); belfry's parser checks the rules.
// Returns an error message, or "" when every term is key=value.
std::string AddLabelTerms(const std::vector<std::string>& terms, nlohmann::ordered_json* labels);

// Publishes one command (`value` nullopt: a tombstone) under key `id`, with a belfry-actor header
// naming who runs the CLI ("<login>@<host>"; a command's own "actor" wins), and, unless told not
// to wait, prints its outcome. Exit code: 0 applied (or not waited for), 1 rejected or not
// published, 3 no outcome within the timeout.
int PublishCommand(const Config& cfg, const std::string& id, const std::optional<std::string>& value,
                   const WaitArgs& wait);

// The database's shard layout record, which every view of slots, lag and load takes (never the
// configured shard_count: a reshard changes the record under the config).
StatusOr<ShardLayout> DatabaseLayout(const Config& cfg);

// A table cell: the time in ISO-8601, or "-".
std::string FormatOptionalTime(const std::optional<EpochMs>& t);

}  // namespace belfry
