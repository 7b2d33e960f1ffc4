#include "migrated_database_test.h"

namespace belfry {
namespace {

// Emptied before every test. DELETE, not TRUNCATE: the tests leave a few rows, and TRUNCATE
// gives each of the jobs table's 121 partitions and their indexes new files (seconds per test).
constexpr const char* kResetDataTables =
    "DELETE FROM jobs; DELETE FROM cron_slots; DELETE FROM executions; DELETE FROM job_stats;"
    " DELETE FROM backfills; DELETE FROM bulk_ops; DELETE FROM job_changes; DELETE FROM job_change_pending";
// Restored before every test from the snapshot of the freshly migrated database.
constexpr const char* kStateTables[] = {"shard_state", "belfry_meta", "cron_zones"};

}  // namespace

void MigratedDatabaseTest::SetUpTestSuite() {
  db_ = PgTestDatabase::CreateMigrated(kMigratedShardCount, &error_).release();
  if (db_ == nullptr) return;
  for (const char* t : kStateTables) {
    db_->Exec(std::string("CREATE TABLE fixture_snapshot_") + t + " AS TABLE " + t);
  }
}

void MigratedDatabaseTest::TearDownTestSuite() {
  delete db_;
  db_ = nullptr;
}

void MigratedDatabaseTest::SetUp() {
  ASSERT_NE(db_, nullptr) << error_;
  std::string sql = std::string(kResetDataTables) + ";";
  for (const char* t : kStateTables) {
    sql += std::string(" DELETE FROM ") + t + "; INSERT INTO " + t +
           " OVERRIDING SYSTEM VALUE TABLE fixture_snapshot_" + t + ";";
  }
  db_->Exec(sql);
}

}  // namespace belfry
