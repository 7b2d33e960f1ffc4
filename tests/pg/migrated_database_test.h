// MigratedDatabaseTest: the gtest fixture of every pg test suite that needs a migrated
// database. A suite gets one database, cloned from the process's migrated template (see
// PgTestDatabase::CreateMigrated), and every test starts from the state the migrations left:
// the data tables are emptied and the small state tables (shard_state, belfry_meta, cron_zones)
// are restored from a snapshot taken right after the clone, whatever columns they have.
//
//   class PgJobStoreTest : public MigratedDatabaseTest {
//    protected:
//     void SetUp() override {
//       MigratedDatabaseTest::SetUp();
//       if (HasFatalFailure()) return;
//       store_ = std::make_unique<PgJobStore>(db().url());
//     }
//   };
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "pg_test_database.h"

namespace belfry {

class MigratedDatabaseTest : public ::testing::Test {
 protected:
  // The shard count the fixture's databases are migrated with (belfry's default).
  static constexpr int32_t kMigratedShardCount = 120;

  static void SetUpTestSuite();
  static void TearDownTestSuite();
  // Fails the test (fatally) when the suite has no database; otherwise resets it.
  void SetUp() override;

  // REQUIRES: SetUp() succeeded.
  static PgTestDatabase& db() { return *db_; }

 private:
  static inline PgTestDatabase* db_ = nullptr;
  static inline std::string error_;
};

}  // namespace belfry
