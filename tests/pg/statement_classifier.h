// StatementClassifier: decides, from PostgreSQL's own plans, where a statement would run on a
// Citus cluster that distributes belfry's tables by `shard` (docs/scale-out.md). Used by
// statement_routing_pgtest, which captures every statement belfry sends and classifies each one.
//
// The model. In the test's database every table with a `shard` column is LIST-partitioned by
// shard, one partition per shard (ModelShardsAsPartitions; `jobs` already is, migration 0005):
// a partition stands for the Citus shard that would hold those rows. A statement that Citus can
// route to one node is one whose shard is known when it is planned; PostgreSQL's equivalent is
// plan-time partition pruning of a custom plan. So the classifier plans each statement with its
// parameters bound (plan_cache_mode = force_custom_plan) and reads which partitions the plan
// keeps, then runs it (EXPLAIN ANALYZE, rolled back) and reads which partitions it really
// scanned. The other tables take the role the deployment gives them (TableRoleOf): reference
// tables, tables local to the coordinator, and tables Citus would have to distribute although
// they have no shard column.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <set>
#include <string>
#include <vector>

namespace belfry {

// From best to worst: a statement's routing is the worst of its tables' (Worse).
enum class Routing {
  kNoTable,         // reads and writes no table (BEGIN, SET, FETCH, advisory locks, to_regclass)
  kLocal,           // only coordinator-local tables, or reads of reference tables: no worker, or any one
  kOneShard,        // every distributed table restricted to the one shard of its parameters at plan time
  kShardSet,        // restricted at plan time to exactly the shards its array parameter names
  kShardPerRow,     // each row restricted to its own shard, known only at run time (a join on shard)
  kReferenceWrite,  // writes a reference table: every node
  kNoShardColumn,   // touches a table Citus would distribute, which has no shard column
  kAllShards,       // reads or writes every shard of a distributed table
  kNotExercised,    // the plan spans shards but the run reached none of them: the parameters are wrong
};
const char* RoutingName(Routing r);
Routing Worse(Routing a, Routing b);

// What the target deployment does with a table (docs/scale-out.md, "Tables").
enum class TableRole {
  kDistributedByShard,  // has a shard column: create_distributed_table(..., 'shard'), co-located
  kDistributedNoShard,  // must be distributed (it grows with the jobs) but has no shard column
  kReference,           // small, read everywhere: create_reference_table
  kCoordinatorLocal,    // stays on the coordinator: temporary staging tables, bulk_ops, schema_migrations
};

// A statement and the representative parameters to plan and run it with.
struct StatementSample {
  std::string sql;  // as belfry sends it; "DECLARE c NO SCROLL CURSOR FOR q" and "EXPLAIN (...) q" plan q
  std::vector<std::optional<std::string>> params;  // $1.. as text; nullopt = NULL
  std::set<int32_t> shards;                        // the shards the parameters name
  std::vector<std::string> setup;  // run in the same transaction first (rows of temporary staging tables)
};

struct Classification {
  Routing routing = Routing::kNoTable;
  // Per table: its routing, and the shards the plan kept and the run scanned.
  std::map<std::string, std::string> tables;
  std::string error;  // non-empty when the statement could not be planned or run
};

// Thread-compatible: one instance per thread. Owns one connection.
class StatementClassifier final {
 public:
  // `url`: the test database, as a role that may run belfry's statements. `temp_tables`: the
  // CREATE TEMPORARY TABLE statements of belfry's staging tables, run once on the connection.
  StatementClassifier(const std::string& url, const std::vector<std::string>& temp_tables);
  StatementClassifier(const StatementClassifier&) = delete;
  StatementClassifier& operator=(const StatementClassifier&) = delete;
  ~StatementClassifier();

  // Utility statements (BEGIN, COMMIT, SET, FETCH, CREATE TEMPORARY TABLE) are kNoTable; COPY
  // into a table is judged by the table, as an INSERT of rows that carry their own shard.
  // Everything else is planned and run in a transaction that is rolled back.
  Classification Classify(const StatementSample& s);

  static TableRole TableRoleOf(const std::string& root_table, bool temporary, bool has_shard_column);

 private:
  struct Relation {
    std::string root;  // the partitioned table, or the table itself
    TableRole role = TableRole::kCoordinatorLocal;
    // The partition's shard; -1 for a DEFAULT partition, -2 for an unpartitioned table, -3 for a
    // partitioned table itself (its partitions appear in the plan apart).
    int32_t shard = -2;
    int32_t shard_position = -1;  // 0-based position of the shard column in an INSERT's target list
  };
  const Relation& Resolve(const std::string& schema, const std::string& name);
  Classification ClassifyPlanned(const StatementSample& s, const std::string& query);
  Classification ClassifyCopy(const std::string& table);

  std::unique_ptr<pqxx::connection> conn_;
  std::map<std::string, Relation> relations_;  // by "schema.name" ("" for the session's temporary schema)
};

// Gives every ordinary table that has a `shard` column one LIST partition per shard in
// [0, shard_count) plus a DEFAULT one, keeping its columns, defaults, constraints and indexes
// (CREATE TABLE ... (LIKE ... INCLUDING ALL) PARTITION BY LIST (shard)), and its rows. As Citus,
// it fails when a unique index of such a table does not contain shard. Returns the tables it
// partitioned.
std::vector<std::string> ModelShardsAsPartitions(pqxx::connection& conn, int32_t shard_count);

}  // namespace belfry
