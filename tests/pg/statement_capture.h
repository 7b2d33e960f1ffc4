// StatementCapture: the statements PostgreSQL received from one role in one database, read from
// pg_stat_statements (the local stack preloads it: scripts/local-stack, pg_write_conf).
//
// The extension and its reset need a superuser, which the tests' role belfry is not. The local
// stack's superuser `postgres` is reachable without a password over its Unix socket; the capture
// finds that socket the way scripts/local-stack finds its server (the postgres process serving
// BELFRY_DATABASE_URL's port, and the postmaster.pid of its data directory), unless
// BELFRY_PG_SUPERUSER_URL names a superuser connection. As that superuser it creates the extension
// in the test's database and a login role of its own, a member of the database URL's role; the
// stores under test connect as that role, so the capture is exactly their statements, whatever
// other tests run on the same server at the same time.
#pragma once

#include <cstdint>
#include <memory>
#include <pqxx/connection>
#include <string>
#include <vector>

namespace belfry {

class StatementCapture final {
 public:
  struct Statement {
    std::string query;  // as pg_stat_statements normalized it
    int64_t calls = 0;
  };

  // `database_url`: the test's own database. nullptr and *error when no superuser is reachable.
  static std::unique_ptr<StatementCapture> Create(const std::string& database_url, std::string* error);
  StatementCapture(const StatementCapture&) = delete;
  StatementCapture& operator=(const StatementCapture&) = delete;
  // Drops the role (best effort: every connection made as it must be closed by then).
  ~StatementCapture();

  // `database_url` connecting as the capture's role.
  const std::string& role_url() const { return role_url_; }

  // Forgets what the role has sent in the database so far.
  void Reset();
  // The top-level statements the role sent in the database since the last Reset.
  std::vector<Statement> Read();
  // pg_stat_statements_info.dealloc: how many times entries were evicted (pg_stat_statements.max).
  int64_t Deallocations();

 private:
  StatementCapture(std::unique_ptr<pqxx::connection> superuser, std::string role, std::string role_url);

  std::unique_ptr<pqxx::connection> superuser_;  // to the test's database
  const std::string role_;
  const std::string role_url_;
};

}  // namespace belfry
