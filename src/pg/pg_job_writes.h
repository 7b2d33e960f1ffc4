// The job writes that the command path (pg_job_store.cc) and the bulk operations' steps
// (pg_job_store_bulk.cc) share: one implementation of each (pg_job_writes.cc; the manual rows'
// in pg_job_store_manual_fires.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <pqxx/result>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

#include "belfry/command.h"
#include "belfry/job.h"
#include "belfry/shard_layout.h"
#include "core/time_zone_database.h"
#include "pg/pg_placing_shard_states.h"

namespace belfry {

class JobChangeLog;

// Job `id` as stored: in its shard by `layout` (StoredShard), else wherever it is (by id alone:
// every partition's primary key); nullopt when there is none.
std::optional<StoredJob> ReadJobInTxn(pqxx::transaction_base& txn, const std::string& id, const ShardLayout& layout);

// Deletes the jobs of `chunk` (a JSON array of {id, shard, src_partition, src_offset}; a job whose
// row holds a later position of the same partition stays) with their retries and manual rows,
// their backfill ranges, delivery errors and calendar slots, in one statement. Returns how many
// jobs it deleted; tells `changes` (when given) which, so that it reads no after for them.
int64_t DeleteJobsAndTheirRows(pqxx::transaction_base& txn, const std::string& chunk,
                               JobChangeLog* changes = nullptr);

// The limited jobs a resume restarted (kSetPausedSql's rows: id, shard, paused_at ms, the resume's
// timestamp): their counts and windows, recomputed from their rows (ResumeFireLimit). One read and
// one update for all of them; unlimited jobs cost nothing here. Calendar jobs' zones come from
// `time_zones`.
void RestartFireLimits(pqxx::transaction_base& txn, const pqxx::result& resumed, const ShardLayout& layout,
                       const TimeZoneDatabase& time_zones);

// The triggers among `fires` whose job is stored in its own shard (ShardForId), set-based: one
// statement finds those jobs, one stores all their rows, whatever the number of triggers. Sets
// their results and returns the indexes of the fires it left to the one-by-one path (backfills,
// and triggers of jobs not found in their shard: unknown, or stored under another shard count).
// REQUIRES: `progress` holds the fires' shards' placing rows (LockPlacingShardStates of
// PlacingShardRows(layout, StoredShard(id, layout))).
std::vector<size_t> ApplyTriggersSetBased(pqxx::transaction_base& txn, const std::vector<ManualFire>& fires,
                                          const ShardLayout& layout, const PlacingShardProgress& progress,
                                          std::vector<ManualFireResult>* results);

}  // namespace belfry
