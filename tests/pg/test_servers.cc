#include "test_servers.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <thread>
#include <optional>
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/result>

#include "local_superuser.h"

namespace belfry {
namespace {

// Sessions that run DDL on one Citus node only: Citus would otherwise propagate some of it
// (ALTER DATABASE, roles) to the other nodes, which get the same statement from us anyway.
constexpr const char* kNodeLocalDdl = "SET citus.enable_ddl_propagation = off";

// SQL quoting of an identifier and of a string literal (standard_conforming_strings, the default).
std::string Quoted(const std::string& text, char quote) {
  std::string out(1, quote);
  for (char c : text) {
    if (c == quote) out.push_back(quote);
    out.push_back(c);
  }
  return out + quote;
}
std::string QuoteIdent(const std::string& name) { return Quoted(name, '"'); }
std::string QuoteLiteral(const std::string& text) { return Quoted(text, '\''); }

}  // namespace

std::unique_ptr<TestServers> TestServers::ForUrl(const std::string& server_url, std::string* error) {
  std::unique_ptr<TestServers> s(new TestServers());
  s->server_url_ = server_url;
  s->owner_ = ConninfoValue(server_url, "user", "belfry");
  try {
    pqxx::connection conn(server_url);
    pqxx::nontransaction txn(conn);
    if (txn.exec("SELECT to_regclass('pg_catalog.pg_dist_node') IS NOT NULL")[0][0].as<bool>()) {
      for (const auto& row : txn.exec(
               "SELECT nodename, nodeport::text FROM pg_dist_node"
               " WHERE isactive AND noderole = 'primary' AND groupid > 0 ORDER BY groupid")) {
        s->workers_.emplace_back(row[0].as<std::string>(), row[1].as<std::string>());
      }
    }
  } catch (const std::exception& e) {
    *error = std::string("cannot reach the test server ($BELFRY_DATABASE_URL): ") + e.what();
    return nullptr;
  }
  if (s->workers_.empty()) return s;

  s->coordinator_host_ = ConninfoValue(server_url, "host", "127.0.0.1");
  s->coordinator_port_ = ConninfoValue(server_url, "port", "5432");
  const std::string dbname = ConninfoValue(server_url, "dbname", "belfry");
  for (const auto& [host, port] : s->workers_) {
    const std::optional<std::string> su = LocalSuperuserUrl(
        WithConninfoOverrides(server_url, {{"host", host}, {"port", port}}), dbname, false, error);
    if (!su) return nullptr;
    s->node_superuser_urls_.push_back(*su);
  }
  const std::optional<std::string> su = LocalSuperuserUrl(server_url, dbname, false, error);
  if (!su) return nullptr;
  s->node_superuser_urls_.push_back(*su);
  return s;
}

void TestServers::OnEveryNode(const std::string& dbname, const std::vector<std::string>& sqls,
                              bool coordinator_first) const {
  std::vector<std::string> urls = node_superuser_urls_;
  if (coordinator_first) std::rotate(urls.rbegin(), urls.rbegin() + 1, urls.rend());
  for (const std::string& su : urls) {
    pqxx::connection conn(dbname.empty() ? su : WithConninfoOverrides(su, {{"dbname", dbname}}));
    pqxx::nontransaction txn(conn);
    txn.exec("SET client_min_messages = warning");
    txn.exec(kNodeLocalDdl);
    for (const std::string& sql : sqls) txn.exec(sql);
  }
}

void TestServers::OnServers(const std::string& sql, bool coordinator_first) const {
  if (!citus()) {
    pqxx::connection conn(server_url_);
    pqxx::nontransaction(conn).exec(sql);
    return;
  }
  OnEveryNode("", {sql}, coordinator_first);
}

void TestServers::CreateDatabase(const std::string& name, const std::string& template_name) const {
  // Owned by the test role: on Citus the superuser creates it.
  OnServers("CREATE DATABASE " + QuoteIdent(name) +
            (template_name.empty() ? "" : " TEMPLATE " + QuoteIdent(template_name)) + " OWNER " + QuoteIdent(owner_));
  if (!citus() || !template_name.empty()) return;
  OnEveryNode(name, {"CREATE EXTENSION citus"});
  pqxx::connection coordinator(WithConninfoOverrides(node_superuser_urls_.back(), {{"dbname", name}}));
  pqxx::nontransaction txn(coordinator);
  txn.exec_params("SELECT citus_set_coordinator_host($1, $2::int)", coordinator_host_, coordinator_port_);
  for (const auto& [host, port] : workers_) txn.exec_params("SELECT citus_add_node($1, $2::int)", host, port);
}

void TestServers::DropDatabase(const std::string& name) const {
  // On Citus the coordinator first: its sessions hold connections to the workers' copies.
  OnServers("DROP DATABASE IF EXISTS " + QuoteIdent(name) + " WITH (FORCE)", /*coordinator_first=*/true);
}

void TestServers::RenameDatabase(const std::string& from, const std::string& to) const {
  OnServers("ALTER DATABASE " + QuoteIdent(from) + " RENAME TO " + QuoteIdent(to));
}

void TestServers::SealTemplate(const std::string& name) const {
  OnServers("ALTER DATABASE " + QuoteIdent(name) + " WITH ALLOW_CONNECTIONS false");
  if (!citus()) return;
  const std::string sessions = "FROM pg_stat_activity WHERE datname = " + QuoteLiteral(name);
  OnEveryNode("", {"SELECT pg_terminate_backend(pid) " + sessions});
  for (const std::string& su : node_superuser_urls_) {
    pqxx::connection node(su);
    for (int attempt = 0;; ++attempt) {
      if (pqxx::nontransaction(node).exec("SELECT count(*) " + sessions)[0][0].as<int64_t>() == 0) break;
      if (attempt >= 100) throw std::runtime_error("sessions of " + name + " did not end on " + su);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace belfry
