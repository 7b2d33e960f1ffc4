// Schema migrations: numbered SQL files (migrations/NNNN_name.sql) applied in version order, and
// the start-up check that a database matches this binary and its config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "belfry/status.h"

namespace belfry {

struct MigrationFile {
  int32_t version = 0;  // NNNN
  std::string name;     // "NNNN_name", the file name without ".sql"
  std::string path;
};

// The migrations in `dir`, sorted by version. Every "*.sql" file must be named NNNN_name.sql
// (four digits, then lower-case letters, digits and '_'); other files are ignored. Invalid for a
// bad name or a repeated version; FailedPrecondition when `dir` cannot be read.
StatusOr<std::vector<MigrationFile>> ListMigrationFiles(const std::string& dir);

// Brings the database up to date. Safe to run from several nodes at once: it holds a session
// advisory lock while it works. Each pending file is applied in its own transaction together
// with its schema_migrations row. Then records shard_count in belfry_meta if it is not there yet
// (FailedPrecondition when the database holds a different one) and creates the shard_state rows
// 0..shard_count-1 that are missing. Last, on a database with the citus extension, distributes
// the tables if they are not yet (belfry_citus_distribute, migration 0019; docs/scale-out.md).
// Retryable when the database cannot be reached.
Status Migrate(const std::string& database_url, const std::string& migrations_dir, int32_t shard_count);

// Read-only check for `belfry serve` and /readyz: Ok iff every migration file is applied (versions
// applied but absent from the directory are fine: a newer binary migrated) and the database's
// shard_count equals `shard_count`. FailedPrecondition with an actionable message otherwise;
// Retryable when the database cannot be reached.
Status CheckSchema(const std::string& database_url, const std::string& migrations_dir, int32_t shard_count);

}  // namespace belfry
