#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "pg/migrator.h"
#include "pg_test_database.h"

namespace belfry {
namespace {

namespace fs = std::filesystem;

// A scratch migrations directory: a copy of the repository's, plus whatever a test adds.
class ScratchMigrations final {
 public:
  ScratchMigrations()
      : dir_(fs::temp_directory_path() /
             ("belfry_migrations_" + std::to_string(::getpid()) + "_" + std::to_string(next_id_++))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const fs::directory_entry& e : fs::directory_iterator(MigrationsDir())) {
      fs::copy_file(e.path(), dir_ / e.path().filename());
    }
  }
  ~ScratchMigrations() { fs::remove_all(dir_); }

  void Add(const std::string& file_name, const std::string& sql) { std::ofstream(dir_ / file_name) << sql; }
  std::string path() const { return dir_.string(); }

 private:
  static inline std::atomic<int> next_id_{0};
  fs::path dir_;
};

class MigratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = PgTestDatabase::Create(&error_);
    ASSERT_NE(db_, nullptr) << error_;
  }

  // version|name rows of schema_migrations plus belfry_meta and the number of shard_state rows:
  // everything Migrate writes.
  std::string MigrationState() {
    std::string out;
    for (const auto& row :
         db_->Exec("SELECT version, name, applied_at::text FROM schema_migrations ORDER BY 1")) {
      out +=
          row[0].as<std::string>() + "|" + row[1].as<std::string>() + "|" + row[2].as<std::string>() + "\n";
    }
    for (const auto& row : db_->Exec("SELECT key, value FROM belfry_meta ORDER BY 1")) {
      out += row[0].as<std::string>() + "=" + row[1].as<std::string>() + "\n";
    }
    out += "shards=" + db_->Exec("SELECT count(*) FROM shard_state")[0][0].as<std::string>();
    return out;
  }

  std::string error_;
  std::unique_ptr<PgTestDatabase> db_;
};

TEST_F(MigratorTest, MigrateCreatesSchemaAndShardRows) {
  ASSERT_TRUE(Migrate(db_->url(), MigrationsDir(), 120).ok());
  EXPECT_EQ(db_->Exec("SELECT value FROM belfry_meta WHERE key = 'shard_count'")[0][0].as<std::string>(),
            "120");
  EXPECT_EQ(db_->Exec("SELECT count(*), min(shard), max(shard) FROM shard_state")[0][0].as<int>(), 120);
  EXPECT_EQ(db_->Exec("SELECT max(shard) FROM shard_state")[0][0].as<int>(), 119);
  EXPECT_EQ(
      db_->Exec("SELECT count(*) FROM shard_state WHERE fired_through IS NULL AND claim_node IS NULL")[0][0]
          .as<int>(),
      120);
  EXPECT_EQ(db_->Exec("SELECT count(*) FROM schema_migrations WHERE version = 1 AND name = '0001_init'")[0][0]
                .as<int>(),
            1);
  EXPECT_TRUE(CheckSchema(db_->url(), MigrationsDir(), 120).ok());
}

TEST_F(MigratorTest, MigrateTwiceIsANoOp) {
  ASSERT_TRUE(Migrate(db_->url(), MigrationsDir(), 60).ok());
  const std::string before = MigrationState();
  const Status again = Migrate(db_->url(), MigrationsDir(), 60);
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(MigrationState(), before);
}

// The number of migration files in the repository (a scratch directory starts with copies of them).
int RepoMigrationCount() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(MigrationsDir())) n += e.path().extension() == ".sql";
  return n;
}

TEST_F(MigratorTest, ConcurrentMigrationsApplyEachVersionOnce) {
  ScratchMigrations dir;
  dir.Add("0099_extra.sql", "CREATE TABLE extra_t (x int);\nINSERT INTO extra_t VALUES (1);\n");
  std::vector<Status> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = Migrate(db_->url(), dir.path(), 120); });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& st : results) EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(db_->Exec("SELECT count(*) FROM schema_migrations")[0][0].as<int>(), RepoMigrationCount() + 1);
  EXPECT_EQ(db_->Exec("SELECT count(*) FROM extra_t")[0][0].as<int>(), 1);
  EXPECT_EQ(db_->Exec("SELECT count(*) FROM shard_state")[0][0].as<int>(), 120);
}

TEST_F(MigratorTest, ShardCountMismatchIsRefused) {
  ASSERT_TRUE(Migrate(db_->url(), MigrationsDir(), 120).ok());
  const Status migrate = Migrate(db_->url(), MigrationsDir(), 60);
  EXPECT_EQ(migrate.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(migrate.message().find("database has shard_count 120 but config says 60"), std::string::npos)
      << migrate.message();
  const Status check = CheckSchema(db_->url(), MigrationsDir(), 60);
  EXPECT_EQ(check.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(check.message().find("database has shard_count 120 but config says 60"), std::string::npos)
      << check.message();
  // Nothing was changed by the refused run.
  EXPECT_EQ(db_->Exec("SELECT count(*) FROM shard_state")[0][0].as<int>(), 120);
}

TEST_F(MigratorTest, CheckSchemaDetectsPendingMigration) {
  ScratchMigrations dir;
  ASSERT_TRUE(Migrate(db_->url(), dir.path(), 120).ok());
  dir.Add("0099_add_things.sql", "CREATE TABLE things (x int);\n");
  const Status pending = CheckSchema(db_->url(), dir.path(), 120);
  EXPECT_EQ(pending.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(pending.message().find("0099_add_things"), std::string::npos) << pending.message();

  ASSERT_TRUE(Migrate(db_->url(), dir.path(), 120).ok());
  EXPECT_TRUE(CheckSchema(db_->url(), dir.path(), 120).ok());
  // A version applied by a newer binary but absent from this one's directory is fine.
  EXPECT_TRUE(CheckSchema(db_->url(), MigrationsDir(), 120).ok());
}

TEST_F(MigratorTest, CheckSchemaOnAnEmptyDatabaseAsksForMigrate) {
  const Status st = CheckSchema(db_->url(), MigrationsDir(), 120);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("belfry migrate"), std::string::npos) << st.message();
}

TEST_F(MigratorTest, FailingMigrationIsRolledBackWhole) {
  ScratchMigrations dir;
  dir.Add("0099_broken.sql", "CREATE TABLE half_done (x int);\nSELECT no_such_function();\n");
  const Status st = Migrate(db_->url(), dir.path(), 120);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("0099_broken"), std::string::npos) << st.message();
  EXPECT_TRUE(db_->Exec("SELECT to_regclass('half_done')")[0][0].is_null());
  EXPECT_EQ(db_->Exec("SELECT count(*) FROM schema_migrations")[0][0].as<int>(), RepoMigrationCount());
}

TEST_F(MigratorTest, BadFileNamesAreRejected) {
  for (const char* bad : {"1_init.sql", "0002-init.sql", "0002_Init.sql", "0002_.sql", "abcd_x.sql"}) {
    ScratchMigrations dir;
    dir.Add(bad, "SELECT 1;");
    const Status st = Migrate(db_->url(), dir.path(), 120);
    EXPECT_EQ(st.code(), Status::Code::kInvalid) << bad << ": " << st.ToString();
  }
  ScratchMigrations dup;
  dup.Add("0001_again.sql", "SELECT 1;");
  EXPECT_EQ(Migrate(db_->url(), dup.path(), 120).code(), Status::Code::kInvalid);
  ScratchMigrations readme;
  readme.Add("README.md", "not a migration");
  EXPECT_TRUE(Migrate(db_->url(), readme.path(), 120).ok());
}

TEST_F(MigratorTest, UnreachableDatabaseIsRetryable) {
  const std::string url = "postgresql://belfry:belfry@127.0.0.1:1/belfry?connect_timeout=2";
  EXPECT_EQ(Migrate(url, MigrationsDir(), 120).code(), Status::Code::kRetryable);
  EXPECT_EQ(CheckSchema(url, MigrationsDir(), 120).code(), Status::Code::kRetryable);
}

TEST(WithDatabaseNameTest, ReplacesTheDatabase) {
  EXPECT_EQ(WithDatabaseName("postgresql://u:p@h:1/belfry", "x"), "postgresql://u:p@h:1/x");
  EXPECT_EQ(WithDatabaseName("postgresql://u:p@h:1/belfry?sslmode=require", "x"),
            "postgresql://u:p@h:1/x?sslmode=require");
  EXPECT_EQ(WithDatabaseName("postgresql://h:1", "x"), "postgresql://h:1/x");
  EXPECT_EQ(WithDatabaseName("postgresql://h:1?a=b", "x"), "postgresql://h:1/x?a=b");
  EXPECT_EQ(WithDatabaseName("host=h port=1", "x"), "host=h port=1 dbname=x");
}

}  // namespace
}  // namespace belfry
