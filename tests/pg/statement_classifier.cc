#include "statement_classifier.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>
#include <regex>
#include <string_view>

namespace belfry {
namespace {

// The tables the deployment keeps apart from the distributed ones (docs/scale-out.md, "Tables").
constexpr const char* kReferenceTables[] = {"belfry_meta", "cron_zones"};
constexpr const char* kCoordinatorTables[] = {"bulk_ops", "schema_migrations"};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) || s.back() == ';'))
    s.remove_suffix(1);
  return s;
}

std::string FirstWord(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && std::isalpha(static_cast<unsigned char>(s[n]))) ++n;
  return Upper(s.substr(0, n));
}

std::string ShardList(const std::set<int32_t>& shards) {
  std::string out = "{";
  for (int32_t s : shards) {
    if (out.size() > 1) out += ",";
    out += s == -1 ? std::string("default") : std::to_string(s);
  }
  return out + "}";
}

// The shard an INSERT's target-list entry names when it is a constant ('7'::smallint, 7), else
// nullopt (a column of the rows inserted: each row carries its own).
std::optional<int32_t> ConstantShard(const std::string& expr) {
  static const std::regex constant(R"(^\(?'?(-?[0-9]+)'?\)?(::(smallint|integer|bigint))?$)");
  std::smatch m;
  if (!std::regex_match(expr, m, constant)) return std::nullopt;
  return std::stoi(m[1].str());
}

// The field `key` of `node` into *out; false when it is absent or of another type.
template <typename T>
bool Field(simdjson::dom::object node, const char* key, T* out) {
  return node[key].get(*out) == simdjson::SUCCESS;
}

// What one statement did to one table.
struct TableUse {
  std::set<int32_t> planned;  // partitions the plan kept (scans and update/delete targets)
  std::set<int32_t> ran;      // partitions a scan of the run reached
  bool written = false;
  bool inserted_per_row = false;
  std::set<int32_t> inserted_constant;  // shards an INSERT names as constants
};

}  // namespace

const char* RoutingName(Routing r) {
  switch (r) {
    case Routing::kNoTable:
      return "no-table";
    case Routing::kLocal:
      return "coordinator";
    case Routing::kOneShard:
      return "one-shard";
    case Routing::kShardSet:
      return "shard-set";
    case Routing::kShardPerRow:
      return "shard-per-row";
    case Routing::kReferenceWrite:
      return "reference-write";
    case Routing::kNoShardColumn:
      return "no-shard-column";
    case Routing::kAllShards:
      return "all-shards";
    case Routing::kNotExercised:
      return "not-exercised";
  }
  return "?";
}

Routing Worse(Routing a, Routing b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

TableRole StatementClassifier::TableRoleOf(const std::string& root_table, bool temporary,
                                           bool has_shard_column) {
  if (temporary) return TableRole::kCoordinatorLocal;
  for (const char* t : kReferenceTables) {
    if (root_table == t) return TableRole::kReference;
  }
  for (const char* t : kCoordinatorTables) {
    if (root_table == t) return TableRole::kCoordinatorLocal;
  }
  return has_shard_column ? TableRole::kDistributedByShard : TableRole::kDistributedNoShard;
}

StatementClassifier::StatementClassifier(const std::string& url, const std::vector<std::string>& temp_tables)
    : conn_(std::make_unique<pqxx::connection>(url)) {
  pqxx::nontransaction txn(*conn_);
  for (const std::string& sql : temp_tables) txn.exec(sql);
}

StatementClassifier::~StatementClassifier() = default;

const StatementClassifier::Relation& StatementClassifier::Resolve(const std::string& schema,
                                                                  const std::string& name) {
  // EXPLAIN names a temporary table's schema "pg_temp": the session's own.
  const std::string key = (schema.rfind("pg_temp", 0) == 0 ? std::string() : schema) + "." + name;
  auto it = relations_.find(key);
  if (it != relations_.end()) return it->second;
  pqxx::nontransaction txn(*conn_);
  // schema "" resolves the name as the session would (its own temporary tables first).
  const pqxx::result r = txn.exec_params(
      "WITH c AS (SELECT c.oid, c.relkind, c.relpersistence, c.relispartition, c.relpartbound"
      "  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
      "  WHERE CASE WHEN $1 = '' THEN c.oid = to_regclass(quote_ident($2)) ELSE n.nspname = $1 AND c.relname "
      "= $2 END),"
      " r AS (SELECT c.*, COALESCE(pg_partition_root(c.oid), c.oid) AS root FROM c) "
      "SELECT rc.relname, r.relpersistence = 't', rc.relkind = 'p',"
      " (SELECT a.attnum FROM pg_attribute a WHERE a.attrelid = r.root AND a.attname = 'shard' AND NOT "
      "a.attisdropped),"
      " CASE WHEN r.relispartition THEN pg_get_expr(r.relpartbound, r.oid) END "
      "FROM r JOIN pg_class rc ON rc.oid = r.root",
      schema.rfind("pg_temp", 0) == 0 ? std::string() : schema, name);
  if (r.empty()) throw std::runtime_error("no relation " + key);
  Relation rel;
  rel.root = r[0][0].as<std::string>();
  const bool temporary = r[0][1].as<bool>();
  const bool partitioned_root = r[0][2].as<bool>();
  const bool has_shard = !r[0][3].is_null();
  if (has_shard) rel.shard_position = r[0][3].as<int32_t>() - 1;
  rel.role = TableRoleOf(rel.root, temporary, has_shard);
  if (!r[0][4].is_null()) {
    static const std::regex in_list(R"(^FOR VALUES IN \('?(-?[0-9]+)'?\)$)");
    const std::string bound = r[0][4].as<std::string>();
    std::smatch m;
    if (bound == "DEFAULT") {
      rel.shard = -1;
    } else if (std::regex_match(bound, m, in_list)) {
      rel.shard = std::stoi(m[1].str());
    }
  } else if (partitioned_root) {
    rel.shard = -3;  // the partitioned table itself: its partitions are listed apart
  }
  return relations_.emplace(key, rel).first->second;
}

Classification StatementClassifier::Classify(const StatementSample& s) {
  const std::string_view sql = Trim(s.sql);
  const std::string word = FirstWord(sql);
  if (word == "BEGIN" || word == "COMMIT" || word == "ROLLBACK" || word == "SET" || word == "FETCH" ||
      word == "CLOSE" || word == "CREATE" || word == "SAVEPOINT" || word == "RELEASE") {
    return Classification{};
  }
  try {
    if (word == "COPY") {
      static const std::regex copy(R"re(^COPY\s+"?([A-Za-z0-9_]+))re", std::regex::icase);
      std::match_results<std::string_view::const_iterator> m;
      if (!std::regex_search(sql.begin(), sql.end(), m, copy))
        return Classification{Routing::kNoTable, {}, "COPY of what?"};
      return ClassifyCopy(m[1].str());
    }
    if (word == "DECLARE") {
      const size_t at = Upper(sql).find(" CURSOR FOR ");
      if (at == std::string::npos) return Classification{Routing::kNoTable, {}, "DECLARE without CURSOR FOR"};
      return ClassifyPlanned(s, std::string(sql.substr(at + 12)));
    }
    if (word == "EXPLAIN") {
      const size_t at = sql.find(')');
      if (at == std::string::npos) return Classification{Routing::kNoTable, {}, "EXPLAIN without options"};
      return ClassifyPlanned(s, std::string(Trim(sql.substr(at + 1))));
    }
    return ClassifyPlanned(s, std::string(sql));
  } catch (const std::exception& e) {
    return Classification{Routing::kNoTable, {}, e.what()};
  }
}

Classification StatementClassifier::ClassifyCopy(const std::string& table) {
  const Relation& rel = Resolve("", table);
  Classification c;
  switch (rel.role) {
    case TableRole::kCoordinatorLocal:
      c.routing = Routing::kLocal;
      break;
    case TableRole::kReference:
      c.routing = Routing::kReferenceWrite;
      break;
    case TableRole::kDistributedNoShard:
      c.routing = Routing::kNoShardColumn;
      break;
    case TableRole::kDistributedByShard:
      c.routing = Routing::kShardPerRow;
      break;  // each row carries its shard
  }
  c.tables[rel.root] = RoutingName(c.routing);
  return c;
}

Classification StatementClassifier::ClassifyPlanned(const StatementSample& s, const std::string& query) {
  std::string args;
  {
    pqxx::nontransaction quoting(*conn_);
    for (const std::optional<std::string>& p : s.params) {
      if (!args.empty()) args += ", ";
      args += p ? quoting.quote(*p) : std::string("NULL");
    }
  }
  const std::string execute = "EXECUTE belfry_classified" + (args.empty() ? std::string() : "(" + args + ")");
  std::string planned, analyzed;
  {
    pqxx::nontransaction txn(*conn_);
    txn.exec("DEALLOCATE ALL");
    txn.exec("BEGIN");
    try {
      // Custom plans: the parameters are constants when the plan is made, so a shard named by a
      // parameter prunes at plan time, as Citus's router planner routes it. Hash and merge joins,
      // materialisation and sequential scans are discouraged so that a join on shard probes each
      // row's own partition (run-time pruning), as Citus pushes a join on the distribution column
      // down shard by shard; only which partitions run matters here, not the plan's cost.
      txn.exec(
          "SET LOCAL plan_cache_mode = force_custom_plan; SET LOCAL enable_hashjoin = off;"
          " SET LOCAL enable_mergejoin = off; SET LOCAL enable_material = off; SET LOCAL enable_seqscan = "
          "off");
      for (const std::string& setup : s.setup) txn.exec(setup);
      txn.exec("PREPARE belfry_classified AS " + query);
      planned = txn.exec("EXPLAIN (VERBOSE, FORMAT JSON) " + execute)[0][0].as<std::string>();
      if (planned.find("\"Relation Name\"") != std::string::npos) {
        analyzed = txn.exec("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + execute)[0][0].as<std::string>();
      }
      txn.exec("ROLLBACK");
    } catch (...) {
      try {
        txn.exec("ROLLBACK");
      } catch (...) {
      }
      throw;
    }
  }
  if (analyzed.empty()) return Classification{};

  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(analyzed);
  std::map<std::string, TableUse> uses;
  std::map<std::string, const Relation*> roots;
  auto walk = [&](auto&& self, simdjson::dom::object node) -> void {
    std::string_view node_type;
    Field(node, "Node Type", &node_type);
    std::string_view name, schema;
    if (Field(node, "Relation Name", &name)) {
      Field(node, "Schema", &schema);
      const Relation& rel = Resolve(std::string(schema), std::string(name));
      roots[rel.root] = &rel;
      TableUse& use = uses[rel.root];
      if (rel.shard != -3) use.planned.insert(rel.shard);
      if (node_type == "ModifyTable") {
        use.written = true;
        std::string_view op;
        Field(node, "Operation", &op);
        if (op == "Insert" && rel.shard_position >= 0) {
          simdjson::dom::array plans, output;
          std::string_view expr;
          if (node["Plans"].get(plans) == simdjson::SUCCESS && plans.size() > 0 &&
              plans.at(0)["Output"].get(output) == simdjson::SUCCESS &&
              output.at(static_cast<size_t>(rel.shard_position)).get(expr) == simdjson::SUCCESS) {
            const std::optional<int32_t> shard = ConstantShard(std::string(expr));
            if (shard) {
              use.inserted_constant.insert(*shard);
            } else {
              use.inserted_per_row = true;
            }
          } else {
            use.inserted_per_row = true;  // cannot tell: the worse case
          }
        }
      } else {
        int64_t loops = 0;
        if (node["Actual Loops"].get(loops) == simdjson::SUCCESS && loops > 0 && rel.shard != -3) {
          use.ran.insert(rel.shard);
        }
      }
    }
    simdjson::dom::array targets;
    if (node["Target Tables"].get(targets) == simdjson::SUCCESS) {
      for (simdjson::dom::element t : targets) {
        std::string_view tname, tschema;
        simdjson::dom::object target;
        if (t.get(target) != simdjson::SUCCESS) continue;
        Field(target, "Relation Name", &tname);
        Field(target, "Schema", &tschema);
        const Relation& rel = Resolve(std::string(tschema), std::string(tname));
        roots[rel.root] = &rel;
        TableUse& use = uses[rel.root];
        use.written = true;
        if (rel.shard != -3) use.planned.insert(rel.shard);
      }
    }
    simdjson::dom::array plans;
    if (node["Plans"].get(plans) == simdjson::SUCCESS) {
      for (simdjson::dom::element child : plans) {
        simdjson::dom::object child_node;
        if (child.get(child_node) == simdjson::SUCCESS) self(self, child_node);
      }
    }
  };
  simdjson::dom::array parts;
  if (doc.get(parts) != simdjson::SUCCESS) throw std::runtime_error("EXPLAIN returned no JSON array");
  for (simdjson::dom::element part : parts) {
    simdjson::dom::object plan;
    if (part["Plan"].get(plan) == simdjson::SUCCESS) walk(walk, plan);
  }

  Classification c;
  for (const auto& [root, use] : uses) {
    const Relation& rel = *roots[root];
    Routing r = Routing::kLocal;
    std::string detail;
    switch (rel.role) {
      case TableRole::kCoordinatorLocal:
        r = Routing::kLocal;
        break;
      case TableRole::kReference:
        r = use.written ? Routing::kReferenceWrite : Routing::kLocal;
        break;
      case TableRole::kDistributedNoShard:
        r = Routing::kNoShardColumn;
        break;
      case TableRole::kDistributedByShard: {
        const Routing one = s.shards.size() == 1 ? Routing::kOneShard : Routing::kShardSet;
        r = Routing::kNoTable;
        if (use.inserted_per_row) {
          r = Worse(r, Routing::kShardPerRow);
          detail += "insert: each row's shard; ";
        }
        if (!use.inserted_constant.empty()) {
          const bool within = std::includes(s.shards.begin(), s.shards.end(), use.inserted_constant.begin(),
                                            use.inserted_constant.end());
          r = Worse(r, within ? one : Routing::kNotExercised);
          detail += "insert: " + ShardList(use.inserted_constant) + "; ";
        }
        std::set<int32_t> planned = use.planned;
        planned.erase(-2);
        if (use.planned.count(-2) > 0) {
          r = Worse(r, Routing::kAllShards);  // not partitioned: the model did not cover it
          detail += "not partitioned by shard; ";
        } else if (!planned.empty()) {
          const bool within = std::includes(s.shards.begin(), s.shards.end(), planned.begin(), planned.end());
          if (within) {
            r = Worse(r, one);
            detail += "plan " + ShardList(planned);
          } else if (use.ran.empty()) {
            r = Worse(r, Routing::kNotExercised);
            detail += "plan " + std::to_string(planned.size()) + " partitions, ran none";
          } else {
            const bool ran_within =
                std::includes(s.shards.begin(), s.shards.end(), use.ran.begin(), use.ran.end());
            r = Worse(r, ran_within ? Routing::kShardPerRow : Routing::kAllShards);
            detail += "plan " + std::to_string(planned.size()) + " partitions, ran " +
                      (ran_within ? ShardList(use.ran) : std::to_string(use.ran.size()) + " partitions");
          }
        }
        if (r == Routing::kNoTable) r = one;
        break;
      }
    }
    c.routing = Worse(c.routing, r);
    c.tables[root] = std::string(RoutingName(r)) + (detail.empty() ? "" : " (" + detail + ")");
  }
  return c;
}

std::vector<std::string> ModelShardsAsPartitions(pqxx::connection& conn, int32_t shard_count) {
  std::vector<std::string> tables;
  pqxx::nontransaction txn(conn);
  // The test fixture's own snapshot copies (fixture_snapshot_*) are not belfry's tables.
  for (const pqxx::row& row :
       txn.exec("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND NOT c.relispartition"
                " AND c.relname NOT LIKE 'fixture\\_%'"
                " AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'shard'"
                "  AND NOT a.attisdropped) ORDER BY 1")) {
    tables.push_back(row[0].as<std::string>());
  }
  for (const std::string& t : tables) {
    // One transaction per table. The old table's indexes are renamed first, so that the new one's
    // take the usual names.
    txn.exec(
        "DO $model$ DECLARE t text := " + txn.quote(t) +
        "; i record; columns text; BEGIN "
        "FOR i IN SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid"
        "  WHERE x.indrelid = t::regclass LOOP"
        "  EXECUTE format('ALTER INDEX %I RENAME TO %I', i.relname, i.relname || '_unpartitioned'); END LOOP;"
        "EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_unpartitioned');"
        "EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING ALL) PARTITION BY LIST (shard)', t, t || "
        "'_unpartitioned');"
        "FOR s IN 0.." +
        std::to_string(shard_count - 1) +
        " LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES IN (%s)',"
        "                 t || '_shard_' || lpad(s::text, 3, '0'), t, s); END LOOP;"
        "EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t || '_shard_default', t);"
        "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO columns FROM pg_attribute"
        "  WHERE attrelid = (t || '_unpartitioned')::regclass AND attnum > 0 AND NOT attisdropped AND "
        "attgenerated = '';"
        "EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I', t, columns, columns, t || '_unpartitioned');"
        "EXECUTE format('DROP TABLE %I', t || '_unpartitioned');"
        "END $model$");
  }
  return tables;
}

}  // namespace belfry
