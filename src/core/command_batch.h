// CommandBatch: what the command consumer does with one poll batch, decided on plain values.
// Parsing, validation, per-job reduction and the outcome records; the adapter only does I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "belfry/bulk_op.h"
#include "belfry/command.h"
#include "belfry/status.h"
#include "core/command_parser.h"

namespace belfry {

// One record for the command-results topic.
struct CommandOutcome {
  std::string id;  // empty when the command carried no usable id (then no record is published)
  std::string op;  // CommandOpName, or "unknown"
  bool applied = false;
  std::string error;  // "<reason>: <message>" when rejected
  int32_t partition = -1;
  int64_t offset = -1;
  // trigger and backfill only, once the store applied them: the triggers stored (or, for a dry
  // run, that it would store) and the slots an earlier backfill covered.
  std::optional<int64_t> slots = std::nullopt;
  int64_t covered = 0;
  bool dry_run = false;
  // A bulk command (docs/bulk-operations.md). Once accepted its record waits (deferred) until the
  // walk has finished (BulkOpRunner), and then carries the selector and the counts.
  bool deferred = false;
  std::optional<std::string> selector_json = std::nullopt;
  int64_t matched = 0;
  int64_t changed = 0;
};

struct CommandRejection {
  size_t index = 0;  // into the raw batch
  Status status;     // Code::kInvalid
};

struct PreparedCommandBatch {
  std::vector<JobAction> actions;          // at most one per id, to apply in one transaction
  // trigger and backfill commands, in input order, to apply after `actions`
  // (JobStore::ApplyManualFires); manual_outcomes[i] is the index of manual[i]'s outcome.
  std::vector<ManualFire> manual;
  std::vector<size_t> manual_outcomes;
  // bulk commands, in input order, to accept after `manual` (JobStore::AcceptBulkOps);
  // bulk_outcomes[i] is the index of bulk[i]'s outcome.
  std::vector<BulkOp> bulk;
  std::vector<size_t> bulk_outcomes;
  std::vector<CommandOutcome> outcomes;    // one per raw command, in input order
  std::vector<CommandRejection> rejections;  // for the DLQ, in input order
  // Commands the store refused for good (RefuseInStore), for the DLQ; reason "store_error".
  std::vector<CommandRejection> store_refusals;
};

PreparedCommandBatch PrepareCommandBatch(const std::vector<RawCommand>& batch, const CommandRules& rules);

// Records what the store did with prepared.manual[i] in its outcome: the counts, or a rejection
// when result.status is not Ok. REQUIRES: results.size() == prepared->manual.size().
void RecordManualFireResults(const std::vector<ManualFireResult>& results, PreparedCommandBatch* prepared);

// Records what the store said to prepared.bulk[i]: Ok leaves its outcome deferred, anything else
// rejects it now. REQUIRES: results.size() == prepared->bulk.size().
void RecordBulkAcceptResults(const std::vector<Status>& results, PreparedCommandBatch* prepared);

// The raw indices of the commands that prepared.actions[action] was reduced from.
std::vector<size_t> ActionCommandIndices(const PreparedCommandBatch& prepared, size_t action);

// The store refused, for good, the commands at `raw_indices` (docs/reliability.md, "Poison
// commands and reports"): each gets a rejected outcome with reason "store_error" and the store's
// message, and a DLQ record (store_refusals). Call after RecordManualFireResults and
// RecordBulkAcceptResults, whose results for these commands it overrides.
void RefuseInStore(const std::vector<size_t>& raw_indices, const Status& store_status,
                   PreparedCommandBatch* prepared);

// The outcome record of a bulk operation that has finished its walk.
CommandOutcome FinishedBulkOutcome(const BulkOpState& state);

// The command-results value: {"id","op","status":"applied"|"rejected","error","partition","offset"},
// and for trigger and backfill "slots" (with "covered" and "dryRun" for a backfill); for a bulk
// command "selector", "matched", "changed" and "dryRun".
std::string EncodeCommandOutcome(const CommandOutcome& outcome);

// Reduces validated commands, in partition order, to at most one JobAction per id whose effect
// equals applying the commands one by one (see command_batch.cc for the rules).
std::vector<JobAction> ReduceCommands(const std::vector<Command>& commands);

}  // namespace belfry
