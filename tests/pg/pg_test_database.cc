#include "pg_test_database.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <pqxx/nontransaction>
#include <random>
#include <thread>

#include "pg/migrator.h"

namespace belfry {

std::string MigrationsDir() { return BELFRY_MIGRATIONS_DIR; }

std::string WithDatabaseName(const std::string& url, const std::string& dbname) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url + " dbname=" + dbname;
  const size_t authority = scheme + 3;
  const size_t query = url.find('?', authority);
  const size_t path = url.find('/', authority);
  const size_t end = query == std::string::npos ? url.size() : query;
  const size_t start = path == std::string::npos || path > end ? end : path;
  return url.substr(0, start) + "/" + dbname + url.substr(end);
}

std::unique_ptr<PgTestDatabase> PgTestDatabase::Create(std::string* error) {
  const char* server_url = std::getenv("BELFRY_DATABASE_URL");
  if (server_url == nullptr || *server_url == '\0') {
    *error =
        "BELFRY_DATABASE_URL is not set. The *_pgtest tests need a real PostgreSQL: run "
        "`scripts/local-stack up` and `eval \"$(scripts/local-stack env)\"` first.";
    return nullptr;
  }
  std::random_device rd;
  const std::string name = "belfry_t_" + std::to_string(::getpid()) + "_" +
                           std::to_string(std::uniform_int_distribution<uint32_t>()(rd));
  try {
    pqxx::connection conn(server_url);
    pqxx::nontransaction txn(conn);
    txn.exec("CREATE DATABASE " + txn.quote_name(name));
  } catch (const std::exception& e) {
    *error = std::string("cannot create test database on $BELFRY_DATABASE_URL: ") + e.what();
    return nullptr;
  }
  return std::unique_ptr<PgTestDatabase>(
      new PgTestDatabase(server_url, name, WithDatabaseName(server_url, name)));
}

namespace {

// One migrated template per shard_count per process, dropped (by ~PgTestDatabase) at exit.
// Migrating takes seconds since 0005 (121 partitions, each with its indexes); cloning a template
// (CREATE DATABASE ... TEMPLATE, WAL_LOG strategy) takes a fraction of one.
std::map<int32_t, std::unique_ptr<PgTestDatabase>>& MigratedTemplates() {
  static auto* templates = new std::map<int32_t, std::unique_ptr<PgTestDatabase>>();
  return *templates;
}

// Drops the templates at exit. Registered after the first connection, so that it runs before
// the atexit cleanup OpenSSL registered then (libpq cannot connect after that has run).
void DropTemplatesAtExit() {
  static const bool registered = [] { return std::atexit([] { MigratedTemplates().clear(); }) == 0; }();
  (void)registered;
}

}  // namespace

std::unique_ptr<PgTestDatabase> PgTestDatabase::CreateMigrated(int32_t shard_count, std::string* error) {
  std::unique_ptr<PgTestDatabase>& tmpl = MigratedTemplates()[shard_count];
  if (tmpl == nullptr) {
    std::unique_ptr<PgTestDatabase> db = Create(error);
    if (db == nullptr) return nullptr;
    const Status st = Migrate(db->url(), MigrationsDir(), shard_count);
    if (!st.ok()) {
      *error = "migrating the test database failed: " + st.ToString();
      return nullptr;
    }
    tmpl = std::move(db);
    DropTemplatesAtExit();
  }
  std::random_device rd;
  const std::string name = "belfry_t_" + std::to_string(::getpid()) + "_" +
                           std::to_string(std::uniform_int_distribution<uint32_t>()(rd));
  // The migrator's backend may still be exiting; CREATE DATABASE refuses a template in use.
  for (int attempt = 0;; ++attempt) {
    try {
      pqxx::connection conn(tmpl->server_url_);
      pqxx::nontransaction txn(conn);
      txn.exec("CREATE DATABASE " + txn.quote_name(name) + " TEMPLATE " + txn.quote_name(tmpl->name()));
      break;
    } catch (const std::exception& e) {
      if (attempt >= 50) {
        *error = std::string("cannot clone the migrated test database: ") + e.what();
        return nullptr;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return std::unique_ptr<PgTestDatabase>(
      new PgTestDatabase(tmpl->server_url_, name, WithDatabaseName(tmpl->server_url_, name)));
}

PgTestDatabase::PgTestDatabase(std::string server_url, std::string name, std::string url)
    : server_url_(std::move(server_url)), name_(std::move(name)), url_(std::move(url)) {}

PgTestDatabase::~PgTestDatabase() {
  conn_.reset();
  try {
    pqxx::connection conn(server_url_);
    pqxx::nontransaction txn(conn);
    txn.exec("DROP DATABASE IF EXISTS " + txn.quote_name(name_) + " WITH (FORCE)");
  } catch (const std::exception&) {
    // Best effort: a leftover belfry_t_* database is harmless and easy to spot.
  }
}

pqxx::result PgTestDatabase::Exec(const std::string& sql) {
  if (conn_ == nullptr || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(url_);
  pqxx::nontransaction txn(*conn_);
  return txn.exec(sql);
}

}  // namespace belfry
