// PgReshard: the steps of `belfry reshard --to N` on the database (docs/resharding.md). Each step
// is one transaction that holds the layout lock exclusive (an advisory lock, kLayoutLockKey) and
// the layout record FOR UPDATE, so it serialises with the command transactions, which hold the
// lock shared while they read the record and write, and each can be run again after a failure:
// the record says where the reshard stands.
#pragma once

#include <cstdint>
#include <string>

#include "belfry/status.h"
#include "core/shard_layout.h"
#include "pg/pg_session.h"

namespace belfry {

class PgReshard final {
 public:
  explicit PgReshard(std::string database_url);

  // The record as it stands.
  StatusOr<ShardLayout> Read();

  // Step 1: validates `to`, creates jobs' partitions for the new shards (one transaction each,
  // so each holds jobs' lock briefly), then records the move (phase "moving"). Idempotent for
  // the same `to`; FailedPrecondition when another reshard is under way. A reshard may begin from
  // a cut-over record (120 -> 240, then 240 -> 480) once every minute before its cut-over minute
  // has been fired: every old shard has fired through it and no shard owes a minute before it.
  // The new reshard's `from` is the cut-over's `to`; FailedPrecondition, naming the shards, until
  // then.
  StatusOr<ShardLayout> Begin(int32_t to);

  // Step 2: moves the next old shard's rows (jobs and cron_slots) to their new shards, in one
  // transaction, and records it. Returns the number of job rows moved; the record's
  // moved_through then says which shard. FailedPrecondition when nothing is left to move.
  StatusOr<int64_t> MoveNextShard();

  // Step 3: once every old shard is moved, picks the cut-over minute, the first that starts at
  // least `lead_ms` after `now_ms`, inserts the new shards' shard_state rows with the watermark
  // cut-over - 1, and records phase "cutover" and the new shard_count.
  StatusOr<ShardLayout> CutOver(int64_t now_ms, int64_t lead_ms);

 private:
  PgSession session_;
};

}  // namespace belfry
