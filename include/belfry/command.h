// Commands: what producers publish to the commands topic, after parsing and validation.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/bulk_op.h"
#include "belfry/job.h"
#include "belfry/status.h"

namespace belfry {

enum class CommandOp { kUpsert, kDelete, kPause, kResume, kTrigger, kBackfill };

// "upsert", "delete", "pause", "resume", "trigger", "backfill".
const char* CommandOpName(CommandOp op);
// The op named so by CommandOpName; nullopt for any other text.
std::optional<CommandOp> CommandOpFromName(std::string_view name);

// A Kafka message from the commands topic, before parsing. `value` is nullopt for a tombstone.
struct RawCommand {
  std::optional<std::string> key;
  std::optional<std::string> value;
  SourcePosition source;
  // The message's "belfry-actor" and "belfry-reason" headers (empty when absent): who sent the
  // command and why, for the audit trail (docs/audit-trail.md). A JSON "actor" or "reason" wins.
  std::string actor_header;
  std::string reason_header;
};

// A backfill command's range and pace (docs/manual-fires.md): the job's slots in [from_ms, to_ms).
struct BackfillRange {
  EpochMs from_ms = 0;
  EpochMs to_ms = 0;
  int32_t rate_per_minute = 60;  // backfill triggers per minute, at most
  bool dry_run = false;          // count the slots, store and fire nothing
};

// A validated command.
struct Command {
  CommandOp op = CommandOp::kUpsert;
  std::string id;
  JobSpec spec;  // meaningful only for kUpsert
  // Why, and who: the command's optional "reason" and "actor", else its belfry-reason and
  // belfry-actor headers; empty when absent. Every change the command makes records them
  // (docs/audit-trail.md); a pause also stores them on the job as its note.
  std::string reason;
  std::string actor;
  BackfillRange backfill;  // kBackfill only
  // Set for a bulk command (docs/bulk-operations.md): op (pause, resume, delete, trigger) acts on
  // every job the selector matches, and `id` names the operation, not a job.
  std::optional<BulkSelector> selector;
  bool dry_run = false;  // a bulk command's dryRun (a backfill's is backfill.dry_run)
  SourcePosition source;
};

// A trigger or backfill command, as the store applies it: after the job actions of its batch, so
// it fires the job as the whole batch left it (JobStore::ApplyManualFires).
struct ManualFire {
  enum class Kind { kTrigger, kBackfill };
  Kind kind = Kind::kTrigger;
  std::string id;  // the job
  BackfillRange backfill;  // kBackfill only
  SourcePosition source;   // its timestamp places the trigger (docs/manual-fires.md)
  std::string actor;       // the command's (Command::actor, Command::reason): for the audit trail
  std::string reason;
  // How late a trigger may still fire when the command is applied after its timestamp
  // (scheduler.max_catchup), from the command rules. The store plans by its shard layout record.
  int64_t max_late_ms = 15 * 60 * 1000;
};

// What applying one ManualFire did. `status` is not Ok when the command could not apply to the
// job as stored (no such job, a one-shot backfilled, too many slots): the outcome record says so.
struct ManualFireResult {
  Status status;
  int64_t slots = 0;    // triggers stored (for a dry run: that it would store)
  int64_t covered = 0;  // backfill: slots of the range an earlier backfill of the job already covered
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
  // Who and why, of the last command folded into this action (the audit trail records them).
  std::string actor;
  std::string reason;
  SourcePosition source;  // position of the last command folded into this action
};

}  // namespace belfry
