#include "test_servers.h"

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

std::string Quote(pqxx::connection& conn, const std::string& name) { return conn.quote_name(name); }

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

void TestServers::OnEveryNode(const std::string& dbname, const std::vector<std::string>& sqls) const {
  for (const std::string& su : node_superuser_urls_) {
    pqxx::connection conn(dbname.empty() ? su : WithConninfoOverrides(su, {{"dbname", dbname}}));
    pqxx::nontransaction txn(conn);
    txn.exec("SET client_min_messages = warning");
    txn.exec(kNodeLocalDdl);
    for (const std::string& sql : sqls) txn.exec(sql);
  }
}

void TestServers::CreateDatabase(const std::string& name, const std::string& template_name) const {
  pqxx::connection conn(server_url_);
  const std::string create = "CREATE DATABASE " + Quote(conn, name) +
                             (template_name.empty() ? "" : " TEMPLATE " + Quote(conn, template_name));
  if (!citus()) {
    pqxx::nontransaction(conn).exec(create);
    return;
  }
  OnEveryNode("", {create + " OWNER " + Quote(conn, owner_)});
  if (!template_name.empty()) return;
  OnEveryNode(name, {"CREATE EXTENSION citus"});
  pqxx::connection coordinator(WithConninfoOverrides(node_superuser_urls_.back(), {{"dbname", name}}));
  pqxx::nontransaction txn(coordinator);
  txn.exec_params("SELECT citus_set_coordinator_host($1, $2::int)", coordinator_host_, coordinator_port_);
  for (const auto& [host, port] : workers_) txn.exec_params("SELECT citus_add_node($1, $2::int)", host, port);
}

void TestServers::DropDatabase(const std::string& name) const {
  pqxx::connection conn(server_url_);
  const std::string drop = "DROP DATABASE IF EXISTS " + Quote(conn, name) + " WITH (FORCE)";
  if (!citus()) {
    pqxx::nontransaction(conn).exec(drop);
    return;
  }
  // The coordinator first: its sessions hold connections to the workers' copies.
  for (auto it = node_superuser_urls_.rbegin(); it != node_superuser_urls_.rend(); ++it) {
    pqxx::connection node(*it);
    pqxx::nontransaction txn(node);
    txn.exec("SET client_min_messages = warning");
    txn.exec(kNodeLocalDdl);
    txn.exec(drop);
  }
}

void TestServers::RenameDatabase(const std::string& from, const std::string& to) const {
  pqxx::connection conn(server_url_);
  const std::string rename = "ALTER DATABASE " + Quote(conn, from) + " RENAME TO " + Quote(conn, to);
  if (!citus()) {
    pqxx::nontransaction(conn).exec(rename);
    return;
  }
  OnEveryNode("", {rename});
}

void TestServers::SealTemplate(const std::string& name) const {
  pqxx::connection conn(server_url_);
  const std::string seal = "ALTER DATABASE " + Quote(conn, name) + " WITH ALLOW_CONNECTIONS false";
  if (!citus()) {
    pqxx::nontransaction(conn).exec(seal);
    return;
  }
  OnEveryNode("", {seal});
  const std::string sessions = "FROM pg_stat_activity WHERE datname = " + conn.quote(name);
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
