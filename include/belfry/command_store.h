// CommandStore: what the command path writes. Called by the command consumer, one transaction
// per call, in this order for a batch: ApplyActions, ApplyManualFires, AcceptBulkOps.
// Implemented by PgJobStore (src/pg/pg_job_store_commands.cc, pg_job_store_manual_fires.cc,
// pg_job_store_bulk.cc). Each records its changes in the audit trail in its own transaction
// (docs/audit-trail.md).
#pragma once

#include <vector>

#include "belfry/bulk_op.h"
#include "belfry/command.h"
#include "belfry/status.h"

namespace belfry {

class CommandStore {
 public:
  virtual ~CommandStore() = default;

  // Applies the actions in one transaction, all or nothing. Idempotent under replay: an action
  // whose source position is at or before the stored row's (same partition) changes nothing.
  virtual Status ApplyActions(const std::vector<JobAction>& actions) = 0;

  // Applies trigger and backfill commands (docs/manual-fires.md) in one transaction, after the
  // ApplyActions of their batch: each stores one-shot rows derived from the job as stored. One
  // result per fire, in order; a fire that cannot apply to the job (none, a one-shot, too many
  // slots) gets a non-Ok status and stores nothing, without failing the others. Idempotent
  // under replay: a trigger's row id is a function of its command, and a backfill records its
  // range, so a replayed or repeated backfill stores only slots no earlier one covered.
  virtual StatusOr<std::vector<ManualFireResult>> ApplyManualFires(const std::vector<ManualFire>& fires) = 0;

  // Records bulk commands (docs/bulk-operations.md; after the ApplyManualFires of their batch),
  // in one transaction; none changes a job here. One status per op: Ok when it is recorded, or
  // was already recorded from the same source position (a replay); Invalid (duplicate_bulk_id)
  // when another command already used its id.
  virtual StatusOr<std::vector<Status>> AcceptBulkOps(const std::vector<BulkOp>& ops) = 0;
};

}  // namespace belfry
