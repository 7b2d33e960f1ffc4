// Commands: what producers publish to the commands topic, after parsing and validation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "belfry/job.h"

namespace belfry {

enum class CommandOp { kUpsert, kDelete, kPause, kResume };

// "upsert", "delete", "pause", "resume".
const char* CommandOpName(CommandOp op);

// A Kafka message from the commands topic, before parsing. `value` is nullopt for a tombstone.
struct RawCommand {
  std::optional<std::string> key;
  std::optional<std::string> value;
  SourcePosition source;
};

// A validated command.
struct Command {
  CommandOp op = CommandOp::kUpsert;
  std::string id;
  JobSpec spec;  // meaningful only for kUpsert
  // kPause only: why, and who (the command's optional "reason" and "actor"; empty when absent).
  std::string pause_reason;
  std::string pause_actor;
  SourcePosition source;
};

// What the batch reducer (src/core/command_batch_reducer) turns a poll batch into: at most one
// action per job id, equivalent to applying the batch's commands in order.
struct JobAction {
  enum class Kind { kUpsert, kDelete, kSetPaused };
  Kind kind = Kind::kUpsert;
  std::string id;
  JobSpec spec;                 // kUpsert only
  std::optional<bool> paused;   // kUpsert: nullopt keeps the stored flag (false for new rows);
                                // kSetPaused: the new flag
  // kUpsert only: if true, an existing row is replaced whole, including the paused flag and the
  // offset, even when the interval is unchanged (the batch deleted the job before re-creating it).
  bool replace_fresh = false;
  // When `paused` is true because of a pause command: its note (stored with the flag).
  std::string pause_reason;
  std::string pause_actor;
  SourcePosition source;  // position of the last command folded into this action
};

}  // namespace belfry
