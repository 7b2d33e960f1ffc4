#include "pg/migrator.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>
#include <set>
#include <sstream>
#include <system_error>

#include "core/shard_layout.h"
#include "pg/pg_schema_queries.h"
#include "pg/pg_session.h"
#include "pg/pg_status.h"

namespace belfry {
namespace {

namespace fs = std::filesystem;
namespace q = pg_queries;

std::vector<PreparedStatement> MigratorStatements() {
  return {
      {q::kMigrationLockName, q::kMigrationLockSql},
      {q::kMigrationUnlockName, q::kMigrationUnlockSql},
      {q::kSchemaMigrationsExistsName, q::kSchemaMigrationsExistsSql},
      {q::kAppliedMigrationsName, q::kAppliedMigrationsSql},
      {q::kRecordMigrationName, q::kRecordMigrationSql},
      {q::kInsertShardCountName, q::kInsertShardCountSql},
      {q::kInsertLayoutName, q::kInsertLayoutSql},
      {q::kGetShardCountName, q::kGetShardCountSql},
      {q::kInsertShardStatesName, q::kInsertShardStatesSql},
      {q::kCitusDistributeExistsName, q::kCitusDistributeExistsSql},
  };
}

// "NNNN_name.sql" with name = [a-z0-9_]+. Returns the version, or -1.
int32_t VersionOf(const std::string& file_name) {
  constexpr std::string_view kSuffix = ".sql";
  if (file_name.size() < 4 + 1 + 1 + kSuffix.size()) return -1;
  if (!file_name.ends_with(kSuffix) || file_name[4] != '_') return -1;
  for (size_t i = 0; i < 4; ++i) {
    if (file_name[i] < '0' || file_name[i] > '9') return -1;
  }
  for (size_t i = 5; i < file_name.size() - kSuffix.size(); ++i) {
    const char c = file_name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return -1;
  }
  int32_t version = 0;
  std::from_chars(file_name.data(), file_name.data() + 4, version);
  return version;
}

Status ValidShardCount(int32_t shard_count) {
  if (shard_count <= 0 || shard_count > 32767) {
    return Status::Invalid("shard_count",
                           "shard_count " + std::to_string(shard_count) + " is outside 1..32767");
  }
  return Status::Ok();
}

std::set<int32_t> AppliedVersions(pqxx::transaction_base& txn) {
  std::set<int32_t> applied;
  for (const pqxx::row& row : txn.exec_prepared(q::kAppliedMigrationsName))
    applied.insert(row[0].as<int32_t>());
  return applied;
}

// Compares the database's shard_count with the config's. `stored` is the belfry_meta value.
// Once a reshard has begun (the layout record is not stable: docs/resharding.md), nodes fire
// and store by the record, not by the config, and the record never returns to stable: any
// config is accepted. The parser's shard (spec.shard) only counts in a stable layout, where
// this check keeps it right.
Status CompareShardCount(pqxx::transaction_base& txn, const pqxx::result& stored, int32_t shard_count) {
  if (stored.empty()) {
    return Status::FailedPrecondition("the database records no shard_count: run `belfry migrate`");
  }
  const pqxx::result layout = txn.exec(q::kReadLayoutSql);
  if (!layout.empty() && !layout[0][0].is_null()) {
    StatusOr<ShardLayout> l = ParseShardLayout(layout[0][0].as<std::string>());
    if (l.ok() && l->phase != ShardLayout::Phase::kStable) return Status::Ok();
  }
  const std::string value = stored[0][0].as<std::string>();
  if (value != std::to_string(shard_count)) {
    return Status::FailedPrecondition("database has shard_count " + value + " but config says " +
                                      std::to_string(shard_count) +
                                      "; shard_count is fixed when the database is created");
  }
  return Status::Ok();
}

StatusOr<std::string> ReadFile(const MigrationFile& file) {
  std::ifstream in(file.path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return Status::FailedPrecondition("cannot read migration " + file.path);
  return text.str();
}

Status ApplyMigration(pqxx::connection& conn, const MigrationFile& file) {
  StatusOr<std::string> sql = ReadFile(file);
  if (!sql.ok()) return sql.status();
  try {
    pqxx::work txn(conn, "migration");
    txn.exec(*sql, file.name);
    txn.exec_prepared(q::kRecordMigrationName, file.version, file.name);
    txn.commit();
    return Status::Ok();
  } catch (const std::exception& e) {
    Status st = StatusFromException(e, "migration " + file.name);
    // A migration that fails for any reason but a connection fault needs a person, not a retry.
    return st.retryable() ? st : Status::FailedPrecondition(st.message());
  }
}

}  // namespace

StatusOr<std::vector<MigrationFile>> ListMigrationFiles(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::FailedPrecondition("cannot read migrations directory " + dir + ": " + ec.message());
  std::vector<MigrationFile> files;
  for (const fs::directory_entry& entry : it) {
    const std::string file_name = entry.path().filename().string();
    if (!file_name.ends_with(".sql")) continue;
    const int32_t version = VersionOf(file_name);
    if (version < 0) {
      return Status::Invalid(
          "migration_name", "migration file " + file_name + " is not named NNNN_name.sql (name: [a-z0-9_]+)");
    }
    files.push_back(MigrationFile{version, file_name.substr(0, file_name.size() - 4), entry.path().string()});
  }
  std::sort(files.begin(), files.end(),
            [](const MigrationFile& a, const MigrationFile& b) { return a.version < b.version; });
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].version == files[i - 1].version) {
      return Status::Invalid("migration_name", "migrations " + files[i - 1].name + " and " + files[i].name +
                                                   " have the same version");
    }
  }
  return files;
}

Status Migrate(const std::string& database_url, const std::string& migrations_dir, int32_t shard_count) {
  if (Status st = ValidShardCount(shard_count); !st.ok()) return st;
  StatusOr<std::vector<MigrationFile>> files = ListMigrationFiles(migrations_dir);
  if (!files.ok()) return files.status();
  PgSession session(database_url, MigratorStatements());
  return session.Run("migrate", [&](pqxx::connection& conn) -> Status {
    std::set<int32_t> applied;
    {
      // Held until the end of the session: closing the connection releases it on any exit path.
      pqxx::nontransaction txn(conn, "migration_lock");
      txn.exec_prepared(q::kMigrationLockName, q::kMigrationLockKey);
      txn.exec(q::kCreateSchemaMigrationsSql);
      applied = AppliedVersions(txn);
    }
    for (const MigrationFile& file : *files) {
      if (applied.count(file.version) != 0) continue;
      if (Status st = ApplyMigration(conn, file); !st.ok()) return st;
    }
    {
      pqxx::work txn(conn, "shard_count");
      txn.exec_prepared(q::kInsertShardCountName, std::to_string(shard_count));
      txn.exec_prepared(q::kInsertLayoutName, shard_count);
      if (Status st = CompareShardCount(txn, txn.exec_prepared(q::kGetShardCountName), shard_count); !st.ok())
        return st;
      txn.exec_prepared(q::kInsertShardStatesName, shard_count);
      txn.commit();
    }
    {
      pqxx::work txn(conn, "citus");
      if (txn.exec_prepared(q::kCitusDistributeExistsName)[0][0].as<bool>()) txn.exec(q::kCitusDistributeSql);
      txn.commit();
    }
    pqxx::nontransaction txn(conn, "migration_unlock");
    txn.exec_prepared(q::kMigrationUnlockName, q::kMigrationLockKey);
    return Status::Ok();
  });
}

Status CheckSchema(const std::string& database_url, const std::string& migrations_dir, int32_t shard_count) {
  if (Status st = ValidShardCount(shard_count); !st.ok()) return st;
  StatusOr<std::vector<MigrationFile>> files = ListMigrationFiles(migrations_dir);
  if (!files.ok()) return files.status();
  PgSession session(database_url, MigratorStatements());
  return session.Run("check schema", [&](pqxx::connection& conn) -> Status {
    pqxx::nontransaction txn(conn, "check_schema");
    if (!txn.exec_prepared(q::kSchemaMigrationsExistsName)[0][0].as<bool>()) {
      return Status::FailedPrecondition("the database has no schema_migrations table: run `belfry migrate`");
    }
    const std::set<int32_t> applied = AppliedVersions(txn);
    std::string pending;
    for (const MigrationFile& file : *files) {
      if (applied.count(file.version) != 0) continue;
      pending += pending.empty() ? "" : ", ";
      pending += file.name;
    }
    if (!pending.empty()) {
      return Status::FailedPrecondition("migrations not applied: " + pending + "; run `belfry migrate`");
    }
    return CompareShardCount(txn, txn.exec_prepared(q::kGetShardCountName), shard_count);
  });
}

}  // namespace belfry
