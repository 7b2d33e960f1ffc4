// The catalog of every SQL statement belfry sends (src/pg/), for statement_routing_pgtest: for
// each, representative parameters to plan it with, the routing the plan must show on a Citus
// cluster distributed by shard (StatementClassifier), and, for any statement that is not routed to
// one node, why: cluster-wide by design (allowed), or a known gap of the trigger and command paths.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "statement_classifier.h"

namespace belfry {

// The paths the test drives, each captured apart.
enum class Phase { kTrigger, kCommand, kExecutions, kClusterWide };
const char* PhaseName(Phase p);

enum class Use {
  kRouted,    // must reach at most one node: no table, the coordinator alone, or one shard
  kAllowed,   // cluster-wide by design (listings, sweeps, the publisher, migrations, the catch-up scan)
  kKnownGap,  // on the trigger or command path, and not yet routed to one node: the reason says why
};
const char* UseName(Use u);

struct CatalogEntry {
  std::string name;        // the constant in src/pg (with [n] for a part of a multi-statement string)
  StatementSample sample;  // the text as belfry sends it, and parameters to plan it with
  std::string copy_table;  // a COPY ... FROM STDIN into this table (pqxx writes the text)
  Routing expected = Routing::kNoTable;
  Use use = Use::kRouted;
  std::string reason;      // required unless kRouted
  std::set<Phase> phases;  // the driven paths that must send it
};

// The statement text as pg_stat_statements normalizes it, further normalized so that the two
// compare equal: every literal and parameter ($n, numbers, strings, true, false, null) becomes
// "?", a minus sign before one is dropped, and whitespace is collapsed.
std::string NormalizeStatement(std::string_view sql);
bool Matches(const CatalogEntry& e, const std::string& normalized_capture);

// The representative rows the catalog's parameters name: a shard, and jobs stored in it, which the
// test creates before it classifies.
struct CatalogFixture {
  static constexpr int32_t kShard = 7;
  static constexpr int32_t kOtherShard = 42;
  static constexpr int32_t kShardCount = 120;
  static constexpr int64_t kTickMs = 500;
  static constexpr int64_t kMinute = 29'000'260;  // the epoch minute "now" of the test
  std::string job;              // an interval job of kShard (every 5 minutes, max_retries 3)
  std::string cron_job;         // a slot-planned calendar job of kShard (Europe/Berlin)
  int64_t cron_src_offset = 0;  // the commands-topic offset of cron_job's last command (partition 0)
  std::vector<int32_t> intervals;
};

// An id whose shard (ShardForId, kShardCount) is `shard`, starting with `prefix`.
std::string IdInShard(const std::string& prefix, int32_t shard);

std::vector<CatalogEntry> BelfryStatements(const CatalogFixture& f);

// The CREATE TEMPORARY TABLE statements of belfry's staging tables (for StatementClassifier).
std::vector<std::string> StagingTables();

}  // namespace belfry
