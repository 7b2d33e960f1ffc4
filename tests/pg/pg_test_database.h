// PgTestDatabase: a throwaway database for one test suite, on the server named by the
// BELFRY_DATABASE_URL environment variable (`scripts/local-stack env` prints it). Integration
// tests require that server: a missing variable is an error, never a skip. When that server is a
// Citus coordinator, each test database is made on the coordinator and every worker
// (test_servers.h), so the same tests run on a Citus cluster (the `citus` label, docs/testing.md).
#pragma once

#include <cstdint>
#include <memory>
#include <pqxx/connection>
#include <pqxx/result>
#include <string>

namespace belfry {

class TestServers;

class PgTestDatabase final {
 public:
  // Creates an empty database named belfry_t_<pid>_<random>. Returns nullptr and sets *error
  // when BELFRY_DATABASE_URL is unset or the server refuses.
  static std::unique_ptr<PgTestDatabase> Create(std::string* error);
  // A database as Create() then Migrate() with the repository's migrations/ and `shard_count`
  // would leave it: a clone of the server's template migrated that way, which every test process
  // shares and which is kept between runs (named after a hash of migrations/; built on first use).
  static std::unique_ptr<PgTestDatabase> CreateMigrated(int32_t shard_count, std::string* error);

  PgTestDatabase(const PgTestDatabase&) = delete;
  PgTestDatabase& operator=(const PgTestDatabase&) = delete;
  // Drops the database (WITH (FORCE): any connection a test left open is terminated).
  ~PgTestDatabase();

  const std::string& name() const { return name_; }
  // A connection URL for the test database.
  const std::string& url() const { return url_; }

  // Runs test set-up or inspection SQL on a connection of the fixture's own, outside any
  // transaction block. Throws on error.
  pqxx::result Exec(const std::string& sql);

 private:
  PgTestDatabase(std::string server_url, std::shared_ptr<const TestServers> servers, std::string name,
                 std::string url);

  const std::string server_url_;
  const std::shared_ptr<const TestServers> servers_;
  const std::string name_;
  const std::string url_;
  std::unique_ptr<pqxx::connection> conn_;
};

// The repository's migrations directory (compiled in as BELFRY_MIGRATIONS_DIR).
std::string MigrationsDir();

// `url` with its database name replaced by `dbname`; works for postgresql:// URIs and for
// key=value connection strings.
std::string WithDatabaseName(const std::string& url, const std::string& dbname);

}  // namespace belfry
