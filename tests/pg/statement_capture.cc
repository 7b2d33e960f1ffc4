#include "statement_capture.h"

#include <dirent.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <random>
#include <sstream>

namespace belfry {
namespace {

using ConninfoPtr = std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)>;

ConninfoPtr Parse(const std::string& url) {
  char* error = nullptr;
  ConninfoPtr options(PQconninfoParse(url.c_str(), &error), &PQconninfoFree);
  if (error != nullptr) PQfreemem(error);
  return options;
}

std::string Quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

// `url` as a keyword=value string with `overrides` replacing (or adding) those keywords.
std::string WithOverrides(const std::string& url,
                          const std::vector<std::pair<std::string, std::string>>& overrides) {
  ConninfoPtr options = Parse(url);
  std::string out;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!out.empty()) out.push_back(' ');
    out += k + "=" + Quoted(v);
  };
  for (const PQconninfoOption* o = options.get(); o != nullptr && o->keyword != nullptr; ++o) {
    bool overridden = false;
    for (const auto& [k, v] : overrides) overridden |= k == o->keyword;
    if (!overridden && o->val != nullptr) add(o->keyword, o->val);
  }
  for (const auto& [k, v] : overrides) add(k, v);
  return out;
}

std::string ValueOf(const std::string& url, const std::string& keyword, const std::string& fallback) {
  ConninfoPtr options = Parse(url);
  for (const PQconninfoOption* o = options.get(); o != nullptr && o->keyword != nullptr; ++o) {
    if (keyword == o->keyword && o->val != nullptr && *o->val != '\0') return o->val;
  }
  return fallback;
}

// The Unix socket directory of the PostgreSQL server listening on `port` on this machine: the
// fifth line of postmaster.pid in the data directory (-D) of a running postgres process.
std::optional<std::string> SocketDirectoryOfPort(const std::string& port) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<std::string> found;
  while (dirent* e = readdir(proc)) {
    const std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline("/proc/" + pid + "/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
    if (args.empty() || args[0].size() < 8 || args[0].compare(args[0].size() - 8, 8, "postgres") != 0)
      continue;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] != "-D") continue;
      std::ifstream pidfile(args[i + 1] + "/postmaster.pid");
      std::vector<std::string> lines;
      for (std::string line; std::getline(pidfile, line);) lines.push_back(line);
      // 1 pid, 2 data directory, 3 start time, 4 port, 5 socket directory, ...
      if (lines.size() >= 5 && lines[0] == pid && lines[3] == port && !lines[4].empty()) found = lines[4];
    }
    if (found) break;
  }
  closedir(proc);
  return found;
}

}  // namespace

std::unique_ptr<StatementCapture> StatementCapture::Create(const std::string& database_url,
                                                           std::string* error) {
  const std::string dbname = ValueOf(database_url, "dbname", "");
  const std::string member_of = ValueOf(database_url, "user", "belfry");
  std::string superuser_url;
  if (const char* env = std::getenv("BELFRY_PG_SUPERUSER_URL"); env != nullptr && *env != '\0') {
    superuser_url = WithOverrides(env, {{"dbname", dbname}});
  } else {
    const std::string port = ValueOf(database_url, "port", "5432");
    const std::optional<std::string> socket_dir = SocketDirectoryOfPort(port);
    if (!socket_dir) {
      *error =
          "no PostgreSQL server process on this machine listens on port " + port +
          " (or its postmaster.pid is unreadable): pg_stat_statements needs the local stack's superuser; "
          "run scripts/local-stack up, or set BELFRY_PG_SUPERUSER_URL";
      return nullptr;
    }
    superuser_url = "host=";
    superuser_url.append(Quoted(*socket_dir)).append(" port=").append(Quoted(port));
    superuser_url.append(" user='postgres' dbname=").append(Quoted(dbname));
  }
  std::random_device rd;
  std::string role = "belfry_capture_";
  role.append(std::to_string(::getpid()))
      .append("_")
      .append(std::to_string(std::uniform_int_distribution<uint32_t>()(rd)));
  std::string password = "p";
  password.append(std::to_string(std::uniform_int_distribution<uint64_t>()(rd)));
  try {
    auto conn = std::make_unique<pqxx::connection>(superuser_url);
    pqxx::nontransaction txn(*conn);
    if (!txn.exec("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")[0][0].as<bool>()) {
      *error = "the superuser connection (" + superuser_url + ") is not a superuser";
      return nullptr;
    }
    txn.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    txn.exec("CREATE ROLE " + txn.quote_name(role) + " LOGIN PASSWORD " + txn.quote(password) + " IN ROLE " +
             txn.quote_name(member_of));
    std::string role_url = WithOverrides(database_url, {{"user", role}, {"password", password}});
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
