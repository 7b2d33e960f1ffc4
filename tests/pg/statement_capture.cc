#include "statement_capture.h"

#include "local_superuser.h"

#include <unistd.h>

#include <exception>
#include <optional>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <random>

namespace belfry {

std::unique_ptr<StatementCapture> StatementCapture::Create(const std::string& database_url,
                                                           std::string* error) {
  const std::string dbname = ConninfoValue(database_url, "dbname", "");
  const std::string member_of = ConninfoValue(database_url, "user", "belfry");
  const std::optional<std::string> superuser_url =
      LocalSuperuserUrl(database_url, dbname, /*allow_env_override=*/true, error);
  if (!superuser_url) return nullptr;
  std::random_device rd;
  std::string role = "belfry_capture_";
  role.append(std::to_string(::getpid()))
      .append("_")
      .append(std::to_string(std::uniform_int_distribution<uint32_t>()(rd)));
  std::string password = "p";
  password.append(std::to_string(std::uniform_int_distribution<uint64_t>()(rd)));
  try {
    auto conn = std::make_unique<pqxx::connection>(*superuser_url);
    pqxx::nontransaction txn(*conn);
    if (!txn.exec("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")[0][0].as<bool>()) {
      *error = "the superuser connection (" + *superuser_url + ") is not a superuser";
      return nullptr;
    }
    txn.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    txn.exec("CREATE ROLE " + txn.quote_name(role) + " LOGIN PASSWORD " + txn.quote(password) + " IN ROLE " +
             txn.quote_name(member_of));
    std::string role_url = WithConninfoOverrides(database_url, {{"user", role}, {"password", password}});
    return std::unique_ptr<StatementCapture>(
        new StatementCapture(std::move(conn), role, std::move(role_url)));
  } catch (const std::exception& e) {
    *error = std::string("cannot prepare the capture as the local stack's superuser: ") + e.what();
    return nullptr;
  }
}

StatementCapture::StatementCapture(std::unique_ptr<pqxx::connection> superuser, std::string role,
                                   std::string role_url)
    : superuser_(std::move(superuser)), role_(std::move(role)), role_url_(std::move(role_url)) {}

StatementCapture::~StatementCapture() {
  try {
    pqxx::nontransaction txn(*superuser_);
    txn.exec("DROP ROLE IF EXISTS " + txn.quote_name(role_));
  } catch (const std::exception&) {
    // Best effort: a leftover belfry_capture_* role owns nothing and can log in nowhere else.
  }
}

void StatementCapture::Reset() {
  pqxx::nontransaction txn(*superuser_);
  txn.exec_params(
      "SELECT pg_stat_statements_reset((SELECT oid FROM pg_roles WHERE rolname = $1),"
      " (SELECT oid FROM pg_database WHERE datname = current_database()), 0)",
      role_);
}

std::vector<StatementCapture::Statement> StatementCapture::Read() {
  pqxx::nontransaction txn(*superuser_);
  std::vector<Statement> out;
  for (const pqxx::row& row : txn.exec_params(
           "SELECT query, calls FROM pg_stat_statements "
           "WHERE userid = (SELECT oid FROM pg_roles WHERE rolname = $1)"
           " AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel",
           role_)) {
    out.push_back(Statement{row[0].as<std::string>(), row[1].as<int64_t>()});
  }
  return out;
}

int64_t StatementCapture::Deallocations() {
  pqxx::nontransaction txn(*superuser_);
  return txn.exec("SELECT dealloc FROM pg_stat_statements_info")[0][0].as<int64_t>();
}

}  // namespace belfry
