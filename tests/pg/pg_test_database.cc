#include "pg_test_database.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <pqxx/nontransaction>
#include <random>
#include <thread>
#include <vector>

#include "core/shard_hash.h"
#include "pg/migrator.h"
#include "test_servers.h"

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
  std::shared_ptr<const TestServers> servers = TestServers::ForUrl(server_url, error);
  if (servers == nullptr) return nullptr;
  try {
    servers->CreateDatabase(name, "");
  } catch (const std::exception& e) {
    *error = std::string("cannot create test database on $BELFRY_DATABASE_URL: ") + e.what();
    return nullptr;
  }
  return std::unique_ptr<PgTestDatabase>(
      new PgTestDatabase(server_url, std::move(servers), name, WithDatabaseName(server_url, name)));
}

namespace {

// Hash of the migrations directory (file names and contents, in name order): a migrated template
// is reused only by runs of the same migrations.
uint64_t MigrationsHash() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(MigrationsDir())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    all += f.filename().string() + '\0' +
           std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()) + '\0';
  }
  return Fnv1a64(all);
}

int64_t DaysSinceEpoch() {
  return std::chrono::duration_cast<std::chrono::hours>(std::chrono::system_clock::now().time_since_epoch())
             .count() /
         24;
}

// The template's database name: belfry_tmpl_<migrations hash>_<shard_count>_<day created>.
struct TemplateName {
  std::string prefix;  // belfry_tmpl_<hash>_<shard_count>_
  int64_t day = 0;
  std::string full() const { return prefix + std::to_string(day); }
};

// Finds or builds the server's migrated template for these migrations and shard_count, shared by
// every test process on the server and kept between runs (see docs/testing.md). Migrating takes
// seconds of server CPU since 0005 (121 partitions, each with its indexes); cloning a template
// (CREATE DATABASE ... TEMPLATE, WAL_LOG strategy) takes a fraction of one. Processes serialise
// on an advisory lock; a template is built under a scratch name and renamed when complete, so a
// crash mid-migration never leaves a half-migrated template behind. Templates made more than a
// day ago for other migrations are dropped on the way.
// Returns the template's name, or "" and sets *error.
std::string SharedMigratedTemplate(const std::string& server_url, const TestServers& servers, int32_t shard_count,
                                   std::string* error) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(MigrationsHash()));
  const std::string prefix = std::string("belfry_tmpl_") + hash + "_" + std::to_string(shard_count) + "_";
  try {
    pqxx::connection conn(server_url);
    pqxx::nontransaction txn(conn);
    // The lock is the session's: it is released when conn closes, whatever happens below.
    txn.exec("SELECT pg_advisory_lock(" + std::to_string(static_cast<int64_t>(Fnv1a64("belfry test templates"))) + ")");
    const pqxx::result existing = txn.exec(
        "SELECT datname FROM pg_database WHERE datname LIKE 'belfry\\_tmpl\\_%' ORDER BY datname");
    const int64_t today = DaysSinceEpoch();
    std::string found;
    for (const auto& row : existing) {
      const std::string name = row[0].as<std::string>();
      if (name.rfind(prefix, 0) == 0) {
        found = name;
        continue;
      }
      const size_t last = name.rfind('_');
      const int64_t day = std::strtoll(name.c_str() + last + 1, nullptr, 10);
      if (day > 0 && day < today - 1) servers.DropDatabase(name);
    }
    if (!found.empty()) return found;

    const std::string scratch = "belfry_tmpl_building_" + std::to_string(::getpid());
    servers.DropDatabase(scratch);
    servers.CreateDatabase(scratch, "");
    const Status st = Migrate(WithDatabaseName(server_url, scratch), MigrationsDir(), shard_count);
    if (!st.ok()) {
      servers.DropDatabase(scratch);
      *error = "migrating the test template failed: " + st.ToString();
      return "";
    }
    const std::string name = prefix + std::to_string(today);
    // No connections: a session left on a template would make every clone of it fail.
    servers.SealTemplate(scratch);
    // The migrator's backend may still be exiting; RENAME refuses a database in use.
    for (int attempt = 0;; ++attempt) {
      try {
        servers.RenameDatabase(scratch, name);
        break;
      } catch (const std::exception&) {
        if (attempt >= 50) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    return name;
  } catch (const std::exception& e) {
    *error = std::string("cannot build the migrated test template: ") + e.what();
    return "";
  }
}

}  // namespace

std::unique_ptr<PgTestDatabase> PgTestDatabase::CreateMigrated(int32_t shard_count, std::string* error) {
  const char* server_url = std::getenv("BELFRY_DATABASE_URL");
  if (server_url == nullptr || *server_url == '\0') return Create(error);  // sets the error
  std::shared_ptr<const TestServers> servers = TestServers::ForUrl(server_url, error);
  if (servers == nullptr) return nullptr;
  static std::mutex mu;
  static auto* templates = new std::map<int32_t, std::string>();
  std::string tmpl;
  {
    std::lock_guard<std::mutex> lock(mu);
    std::string& t = (*templates)[shard_count];
    if (t.empty()) t = SharedMigratedTemplate(server_url, *servers, shard_count, error);
    tmpl = t;
  }
  if (tmpl.empty()) return nullptr;
  std::random_device rd;
  const std::string name = "belfry_t_" + std::to_string(::getpid()) + "_" +
                           std::to_string(std::uniform_int_distribution<uint32_t>()(rd));
  try {
    servers->CreateDatabase(name, tmpl);
  } catch (const std::exception& e) {
    *error = std::string("cannot clone the migrated test template ") + tmpl + ": " + e.what();
    return nullptr;
  }
  return std::unique_ptr<PgTestDatabase>(
      new PgTestDatabase(server_url, std::move(servers), name, WithDatabaseName(server_url, name)));
}

PgTestDatabase::PgTestDatabase(std::string server_url, std::shared_ptr<const TestServers> servers,
                               std::string name, std::string url)
    : server_url_(std::move(server_url)), servers_(std::move(servers)), name_(std::move(name)), url_(std::move(url)) {}

PgTestDatabase::~PgTestDatabase() {
  conn_.reset();
  try {
    servers_->DropDatabase(name_);
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
