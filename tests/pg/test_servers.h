// TestServers: the servers a test database lives on, and the DDL that makes, clones, renames and
// drops one there. On a plain PostgreSQL that is one server, reached as the test role of
// BELFRY_DATABASE_URL. On a Citus coordinator (a server whose database has the citus extension
// and active workers: scripts/local-stack citus-up) it is the coordinator and every worker: each
// test database is a database of the same name on each node, made and dropped as the local
// stack's superuser (local_superuser.h), because Citus does not propagate CREATE DATABASE and
// CREATE EXTENSION citus needs a superuser. A database created empty on Citus gets the extension
// on every node and its workers registered on the coordinator; a clone of a template made the
// same way on every node is a cluster of its own, with the template's distributed tables.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace belfry {

class TestServers final {
 public:
  // nullptr and *error when the server cannot be reached (or, on Citus, a node's superuser).
  static std::unique_ptr<TestServers> ForUrl(const std::string& server_url, std::string* error);

  bool citus() const { return !node_superuser_urls_.empty(); }

  // Each throws on error. `template_name` "" creates an empty database.
  void CreateDatabase(const std::string& name, const std::string& template_name) const;
  void DropDatabase(const std::string& name) const;  // IF EXISTS, WITH (FORCE)
  void RenameDatabase(const std::string& from, const std::string& to) const;
  // No connections to `name` from now on (a session on a template makes every clone fail),
  // and none left: on Citus, the maintenance daemons and their connections are terminated.
  void SealTemplate(const std::string& name) const;

 private:
  TestServers() = default;

  // Runs `sqls` in order on every Citus node, as its superuser, in database `dbname` ("" for the
  // server URL's own): the workers first, or the coordinator first when `coordinator_first`.
  void OnEveryNode(const std::string& dbname, const std::vector<std::string>& sqls,
                   bool coordinator_first = false) const;
  // Runs `sql` where the test databases live: on the server as the test role, or on every Citus
  // node (OnEveryNode).
  void OnServers(const std::string& sql, bool coordinator_first = false) const;

  std::string server_url_;
  std::string owner_;  // the test role: owner of every database made on Citus
  // Citus only: superuser connection strings of the workers, then the coordinator (in the server
  // URL's database), and the workers' addresses as the coordinator knows them.
  std::vector<std::string> node_superuser_urls_;
  std::string coordinator_host_;
  std::string coordinator_port_;
  std::vector<std::pair<std::string, std::string>> workers_;  // host, port
};

}  // namespace belfry
