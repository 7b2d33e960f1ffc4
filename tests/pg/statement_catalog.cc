#include "statement_catalog.h"

#include <cctype>
#include <iterator>
#include <regex>
#include <utility>

#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "pg/pg_bulk_op_queries.h"
#include "pg/pg_command_queries.h"
#include "pg/pg_due_queries.h"
#include "pg/pg_due_query_stream.h"
#include "pg/pg_execution_queries.h"
#include "pg/pg_job_change_queries.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_load_queries.h"
#include "pg/pg_maintenance_queries.h"
#include "pg/pg_manual_fire_queries.h"
#include "pg/pg_read_queries.h"
#include "pg/pg_schema_queries.h"
#include "pg/pg_shard_ledger_queries.h"

namespace belfry {
namespace {

namespace q = pg_queries;
using P = std::vector<std::optional<std::string>>;
using F = CatalogFixture;

std::string N(int64_t v) { return std::to_string(v); }

// `sql` split at its top-level semicolons (pg_stat_statements records each part of a
// multi-statement string apart).
std::vector<std::string> SplitStatements(std::string_view sql) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : sql) {
    if (c == '\'') quoted = !quoted;
    if (c == ';' && !quoted) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  if (cur.find_first_not_of(" \t\n") != std::string::npos) out.push_back(cur);
  return out;
}

// The row of belfry_upsert_stage for f.cron_job, as the command path stages an upsert of it at
// `src_offset` in partition 0: the stored row's own position reaches the row and its calendar
// slots (the slot statements), a later one passes the replay guard (the update).
std::string UpsertStageRow(const F& f, int64_t src_offset) {
  return "INSERT INTO belfry_upsert_stage VALUES ('" + f.cron_job + "', " + N(F::kShard) +
         ", 0, 0, false, 'route', 't', '', '{}', NULL, NULL, 0, NULL, false, 0, " + N(src_offset) +
         ", NULL, NULL, 0, NULL, 0, 60000, 2, 3600000, '0 9 * * MON-FRI', 'Europe/Berlin', '{0}', 512, -2, "
         "8190,"
         " 62, false, true, '', '', NULL, NULL, NULL, NULL, '{}', NULL, NULL, NULL)";
}

std::string ExecutionStageRow(const F& f) {
  return "INSERT INTO belfry_execution_stage VALUES ('" + f.job + "', " +
         N(SlotMs(F::kMinute, F::kShard, F::kTickMs)) + ", 0, 'failed', 'HTTP 503', NULL, " +
         N(F::kMinute * 60'000 + 9'000) + ", 'w', 0, 9000)";
}

std::string JobStatsStageRow(const F& f) {
  return "INSERT INTO belfry_job_stats_stage VALUES ('" + f.job + "', 'failed', " +
         N(SlotMs(F::kMinute, F::kShard, F::kTickMs)) + ", 0, 'HTTP 503', " + N(F::kMinute * 60'000 + 9'000) +
         ", 1, 0, 1, NULL)";
}

// {"id": .., "shard": .., ...} of `id` in kShard, with `more` fields.
std::string OneRow(const std::string& id, const std::string& more = "") {
  return R"([{"id":")" + id + R"(","shard":)" + N(F::kShard) + more + "}]";
}

class Catalog {
 public:
  Catalog& Add(std::string name, std::string sql, P params, Routing expected, Use use, std::string reason,
               std::set<Phase> phases, std::vector<std::string> setup = {},
               std::set<int32_t> shards = {F::kShard}) {
    const std::vector<std::string> parts = SplitStatements(sql);
    for (size_t i = 0; i < parts.size(); ++i) {
      CatalogEntry e;
      e.name = parts.size() == 1 ? name : name + "[" + N(static_cast<int64_t>(i)) + "]";
      e.sample = StatementSample{parts[i], params, shards, setup};
      e.expected = expected;
      e.use = use;
      e.reason = reason;
      e.phases = phases;
      entries_.push_back(std::move(e));
    }
    return *this;
  }

  Catalog& Copy(std::string table, Routing expected, Use use, std::string reason, std::set<Phase> phases) {
    CatalogEntry e;
    e.name = "COPY " + table;
    e.copy_table = table;
    e.sample.sql = "COPY " + table + " FROM STDIN";
    e.expected = expected;
    e.use = use;
    e.reason = std::move(reason);
    e.phases = std::move(phases);
    entries_.push_back(std::move(e));
    return *this;
  }

  std::vector<CatalogEntry> Take() { return std::move(entries_); }

 private:
  std::vector<CatalogEntry> entries_;
};

}  // namespace

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kTrigger:
      return "trigger";
    case Phase::kCommand:
      return "command";
    case Phase::kExecutions:
      return "executions";
    case Phase::kClusterWide:
      return "cluster-wide";
  }
  return "?";
}

const char* UseName(Use u) {
  switch (u) {
    case Use::kRouted:
      return "routed";
    case Use::kAllowed:
      return "allowed";
    case Use::kKnownGap:
      return "KNOWN GAP";
  }
  return "?";
}

std::string NormalizeStatement(std::string_view sql) {
  std::string out;
  bool space = false;
  auto emit = [&](std::string_view token) {
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.append(token);
  };
  const size_t n = sql.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = static_cast<unsigned char>(sql[i]);
    if (std::isspace(c)) {
      space = true;
      ++i;
    } else if (c == '\'') {  // a string literal, '' inside
      size_t j = i + 1;
      while (j < n && !(sql[j] == '\'' && !(j + 1 < n && sql[j + 1] == '\''))) j += sql[j] == '\'' ? 2 : 1;
      emit("?");
      i = j + 1;
    } else if (c == '"') {  // a quoted identifier, kept
      size_t j = sql.find('"', i + 1);
      j = j == std::string_view::npos ? n : j + 1;
      emit(sql.substr(i, j - i));
      i = j;
    } else if (c == '$' && i + 1 < n && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      size_t j = i + 1;
      while (j < n && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
      emit("?");
      i = j;
    } else if (std::isdigit(c)) {
      size_t j = i;
      while (j < n && (std::isdigit(static_cast<unsigned char>(sql[j])) || sql[j] == '.')) ++j;
      emit("?");
      i = j;
    } else if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < n && (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_' || sql[j] == '$'))
        ++j;
      std::string word(sql.substr(i, j - i));
      std::string lower = word;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      // extract(epoch FROM t): the parser turns the field name into a string constant.
      const bool extract_field = out.size() >= 8 && (out.compare(out.size() - 8, 8, "extract(") == 0 ||
                                                     out.compare(out.size() - 8, 8, "EXTRACT(") == 0);
      emit(lower == "true" || lower == "false" || lower == "null" || extract_field ? std::string("?") : word);
      i = j;
    } else {
      emit(std::string_view(&sql[i], 1));
      ++i;
    }
  }
  // pg_stat_statements folds a negative number's sign into its $n; binary minus stays. Dropping
  // every minus before a "?" makes both forms alike.
  std::string folded;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '-') {
      size_t j = i + 1;
      if (j < out.size() && out[j] == ' ') ++j;
      if (j < out.size() && out[j] == '?') {
        if (!folded.empty() && folded.back() == ' ' && j > i + 1) folded.pop_back();
        continue;
      }
    }
    folded.push_back(out[i]);
  }
  while (!folded.empty() && (folded.back() == ';' || folded.back() == ' ')) folded.pop_back();
  return folded;
}

bool Matches(const CatalogEntry& e, const std::string& normalized_capture) {
  if (!e.copy_table.empty()) {
    const std::regex copy("^COPY \"?" + e.copy_table + "\"? ?\\(.*\\) FROM STDIN$", std::regex::icase);
    return std::regex_match(normalized_capture, copy);
  }
  return NormalizeStatement(e.sample.sql) == normalized_capture;
}

std::string IdInShard(const std::string& prefix, int32_t shard) {
  for (int i = 0;; ++i) {
    std::string id = prefix + "-" + std::to_string(i);
    if (ShardForId(id, F::kShardCount) == shard) return id;
  }
}

std::vector<std::string> StagingTables() {
  std::vector<std::string> out = {q::kCreateUpsertStageSql};
  for (const std::string& s : SplitStatements(q::kCreateExecutionStagesSql)) out.push_back(s);
  return out;
}

std::vector<CatalogEntry> BelfryStatements(const F& f) {
  const std::string S = N(F::kShard);
  const std::string M = N(F::kMinute);
  const std::string slot = N(SlotMs(F::kMinute, F::kShard, F::kTickMs));
  DueQuery minute;
  minute.shard = F::kShard;
  minute.first_minute = minute.last_minute = F::kMinute;
  minute.tick_ms = F::kTickMs;
  minute.terms = TermsForMinute(f.intervals, F::kMinute);
  DueQuery range = minute;
  range.first_minute = F::kMinute - 5;
  range.terms = TermsForRange(f.intervals, range.first_minute, F::kMinute);
  const std::string phases = PhaseArrayLiteral(minute).value();
  const std::string range_phases = PhaseArrayLiteral(range).value();
  const std::string shards = "{" + S + "}";  // the tick's $1 is the stored shards, smallint[]
  const P tick = {shards, phases, slot};
  const P cron_tick = {shards, phases, slot, "{2048}", "{512}", "{2}", "{2048}", "{2}"};
  const P range_tick = {shards, range_phases, N(range.first_minute), M, N(F::kShard * F::kTickMs)};
  P cron_range_tick = range_tick;
  for (const char* a : {"{2048}", "{512}", "{2}", "{2048}", "{2}"}) cron_range_tick.push_back(a);
  cron_range_tick.push_back("{" + M + "}");

  const std::set<Phase> trigger = {Phase::kTrigger};
  const std::set<Phase> command = {Phase::kCommand};
  const std::set<Phase> executions = {Phase::kExecutions};
  const std::set<Phase> cluster = {Phase::kClusterWide};
  const std::set<Phase> none = {};
  const std::vector<std::string> upsert_stage = {UpsertStageRow(f, f.cron_src_offset)};
  const std::vector<std::string> newer_upsert_stage = {UpsertStageRow(f, f.cron_src_offset + 1000)};
  const std::string delete_rows = OneRow(f.job, R"(,"src_partition":0,"src_offset":1000000)");

  // Reasons shared by several statements.
  const std::string batch =
      "the command batch (one transaction per Kafka poll, up to 5000 commands) spans shards: each row "
      "carries its shard, PostgreSQL prunes per row at run time, but Citus sees no shard in the statement "
      "and runs it on every shard of the batch (a multi-shard statement, 2PC). Router queries need the "
      "batch split per shard (or per worker), see docs/scale-out.md";
  const std::string stage =
      batch +
      "; the rows come from a coordinator-local temporary table, which Citus first ships to the workers";
  const std::string no_shard_column =
      "the table has no shard column (keyed by job id): distributing it co-located with jobs needs a shard "
      "column (docs/scale-out.md, \"Migrations\")";
  const std::string admin =
      "admin read: a listing or count over every shard (docs/scale-out.md, \"Multi-shard\")";

  Catalog c;
  // ---- The trigger path: shard claims, the tick query, debt. ----
  c.Add("kClaimShardSql", q::kClaimShardSql, {S, "node-a", M, "3000"}, Routing::kOneShard, Use::kRouted, "",
        trigger)
      .Add("kMarkFiredSql", q::kMarkFiredSql, {S, M, "node-a", "3000", "false"}, Routing::kOneShard,
           Use::kRouted, "", trigger)
      .Add("kAdvanceShardSql", q::kAdvanceShardSql, {S, M, N(F::kMinute - 3), N(F::kMinute - 2), "node-a"},
           Routing::kOneShard, Use::kRouted, "", trigger)
      .Add("kReleaseShardSql", q::kReleaseShardSql, {S, "node-a"}, Routing::kOneShard, Use::kRouted, "",
           trigger)
      .Add("kClaimDebtSql", q::kClaimDebtSql, {S, "node-a", "3000"}, Routing::kOneShard, Use::kRouted, "",
           trigger)
      .Add("kRenewDebtSql", q::kRenewDebtSql, {S, "node-a", "3000"}, Routing::kOneShard, Use::kRouted, "",
           trigger)
      .Add("kSettleDebtSql", q::kSettleDebtSql, {S, N(F::kMinute - 3), N(F::kMinute - 2), "node-a"},
           Routing::kOneShard, Use::kRouted, "", trigger)
      .Add("kReleaseDebtSql", q::kReleaseDebtSql, {S, "node-a"}, Routing::kOneShard, Use::kRouted, "",
           trigger)
      .Add("kLoadShardStatesSql", q::kLoadShardStatesSql, {}, Routing::kAllShards, Use::kAllowed,
           "the catch-up scan (every tick, every node) and `belfry shards`: all shard_state rows, one tiny "
           "row "
           "per shard; on Citus a multi-shard read, see docs/scale-out.md, \"The catch-up scan\"",
           {Phase::kTrigger, Phase::kClusterWide})
      .Add("kDueJobsCursor", q::kDueJobsCursor.declare_sql, tick, Routing::kOneShard, Use::kRouted, "",
           trigger)
      .Add("kDueJobsHighCursor", q::kDueJobsHighCursor.declare_sql, tick, Routing::kOneShard, Use::kRouted,
           "", trigger)
      .Add("kDueJobsLowCursor", q::kDueJobsLowCursor.declare_sql, tick, Routing::kOneShard, Use::kRouted, "",
           trigger)
      .Add("kDueJobsWithCronCursor", q::kDueJobsWithCronCursor.declare_sql, cron_tick, Routing::kOneShard,
           Use::kRouted, "", trigger)
      .Add("kDueJobsHighWithCronCursor", q::kDueJobsHighWithCronCursor.declare_sql, cron_tick,
           Routing::kOneShard, Use::kRouted, "", trigger)
      .Add("kDueJobsLowWithCronCursor", q::kDueJobsLowWithCronCursor.declare_sql, cron_tick,
           Routing::kOneShard, Use::kRouted, "", trigger)
      .Add("kDueJobsRangeCursor", q::kDueJobsRangeCursor.declare_sql, range_tick, Routing::kOneShard,
           Use::kRouted, "", trigger)
      .Add("kDueJobsRangeWithCronCursor", q::kDueJobsRangeWithCronCursor.declare_sql, cron_range_tick,
           Routing::kOneShard, Use::kRouted, "", trigger)
      .Add("kDueJobsCursor.fetch_sql", q::kDueJobsCursor.fetch_sql, {}, Routing::kNoTable, Use::kRouted, "",
           trigger)
      .Add("kDueJobsHighCursor.fetch_sql", q::kDueJobsHighCursor.fetch_sql, {}, Routing::kNoTable,
           Use::kRouted, "", trigger)
      .Add("kDueJobsLowCursor.fetch_sql", q::kDueJobsLowCursor.fetch_sql, {}, Routing::kNoTable, Use::kRouted,
           "", trigger)
      .Add("kDueJobsRangeCursor.fetch_sql", q::kDueJobsRangeCursor.fetch_sql, {}, Routing::kNoTable,
           Use::kRouted, "", trigger)
      .Add("kCountCronZonesSql", q::kCountCronZonesSql, {}, Routing::kLocal, Use::kRouted, "",
           {Phase::kTrigger, Phase::kClusterWide})
      .Add("kCountUnknownZoneJobsSql", q::kCountUnknownZoneJobsSql, {shards, "{1}"}, Routing::kOneShard,
           Use::kRouted, "", none)
      .Add("kListCronZonesSql", q::kListCronZonesSql, {}, Routing::kLocal, Use::kRouted, "",
           {Phase::kTrigger, Phase::kClusterWide})
      .Add("PgDueQueryStream: BEGIN", "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ", {},
           Routing::kNoTable, Use::kRouted, "", {Phase::kTrigger, Phase::kClusterWide})
      // `belfry explain`'s snapshot (kBeginExplainSnapshotSql) turns Citus's local execution off.
      .Add("PgDueQueryStream: explain's SET", "SET LOCAL citus.enable_local_execution = off", {},
           Routing::kNoTable, Use::kRouted, "", {Phase::kClusterWide})
      .Add("COMMIT", "COMMIT", {}, Routing::kNoTable, Use::kRouted, "",
           {Phase::kTrigger, Phase::kCommand, Phase::kExecutions, Phase::kClusterWide})
      .Add("ROLLBACK", "ROLLBACK", {}, Routing::kNoTable, Use::kRouted, "", none);

  // ---- The command path: ApplyActions, ApplyManualFires, AcceptBulkOps. ----
  c.Add("kGetShardCountSql", q::kGetShardCountSql, {}, Routing::kLocal, Use::kRouted, "", none)
      // PgSession, at every connect: whether the database has Citus.
      .Add("kCitusInstalledSql", q::kCitusInstalledSql, {}, Routing::kNoTable, Use::kRouted, "",
           {Phase::kTrigger, Phase::kCommand, Phase::kExecutions, Phase::kClusterWide})
      // PgSession, at every connect: whether text is byte-ordered (the id prefix of job lists).
      .Add("kByteOrderedTextSql", q::kByteOrderedTextSql, {}, Routing::kNoShardColumn, Use::kAllowed,
           "reads the catalog pg_database, local to the node it connects to",
           {Phase::kTrigger, Phase::kCommand, Phase::kExecutions, Phase::kClusterWide})
      // The shard layout record (docs/resharding.md): read in every transaction that names a
      // stored shard; a write first takes the layout lock shared (an advisory lock, on the
      // coordinator), then reads the record with now(); belfry_meta is a reference table on Citus.
      .Add("kLockLayoutSharedSql", q::kLockLayoutSharedSql, {N(q::kLayoutLockKey)}, Routing::kNoTable,
           Use::kRouted, "", {Phase::kCommand, Phase::kExecutions})
      .Add("kReadLayoutAndNowSql", q::kReadLayoutAndNowSql, {}, Routing::kLocal, Use::kRouted, "",
           {Phase::kCommand, Phase::kExecutions})
      .Add("kReadLayoutSql", q::kReadLayoutSql, {}, Routing::kLocal, Use::kRouted, "", cluster)
      .Add("kUpsertStageExistsSql", q::kUpsertStageExistsSql, {}, Routing::kNoTable, Use::kRouted, "",
           command)
      .Add("kCreateUpsertStageSql", q::kCreateUpsertStageSql, {}, Routing::kNoTable, Use::kRouted, "",
           command)
      .Copy("belfry_upsert_stage", Routing::kLocal, Use::kRouted, "", command)
      .Add("kStagedJoinSettingsSql", q::kStagedJoinSettingsSql, {}, Routing::kNoTable, Use::kRouted, "",
           command)
      .Add("kRegisterStagedZonesSql", q::kRegisterStagedZonesSql, {}, Routing::kReferenceWrite, Use::kAllowed,
           "numbers a time zone new to cron_zones (a reference table: the write goes to every node, in 2PC); "
           "sent only in batches holding slot-planned calendar jobs, and writes a row only for a zone never "
           "seen",
           command, upsert_stage)
      .Add("kInsertStagedJobsSql", q::kInsertStagedJobsSql, {}, Routing::kShardPerRow, Use::kKnownGap, stage,
           command, upsert_stage)
      .Add("kUpdateStagedJobsSql", q::kUpdateStagedJobsSql, {}, Routing::kShardPerRow, Use::kKnownGap, stage,
           command, newer_upsert_stage)
      .Add("kDeleteStagedSlotsSql", q::kDeleteStagedSlotsSql, {}, Routing::kShardPerRow, Use::kKnownGap,
           stage, command, upsert_stage)
      .Add("kInsertStagedSlotsSql", q::kInsertStagedSlotsSql, {}, Routing::kShardPerRow, Use::kKnownGap,
           stage, command, upsert_stage)
      .Add("kDeleteJobsAndTheirRowsSql", q::kDeleteJobsAndTheirRowsSql, {delete_rows}, Routing::kNoShardColumn,
           Use::kKnownGap,
           batch + "; and the backfills and trigger_delivery_errors of the deleted jobs: " + no_shard_column,
           command)
      .Add("kSetPausedSql", q::kSetPausedSql,
           {OneRow(f.job,
                   R"(,"paused":true,"src_partition":0,"src_offset":1000000,"reason":"","actor":"","ts":0)"),
            "2026-01-01 00:00:00+00"},
           Routing::kShardPerRow, Use::kKnownGap, batch, command)
      .Add("kReadJobsByKeysSql", q::kReadJobsByKeysSql, {OneRow(f.job)}, Routing::kShardPerRow,
           Use::kKnownGap, batch + "; the audit trail's after-image and the resumed limited jobs", command)
      .Add("kLockJobsByKeysSql", q::kLockJobsByKeysSql, {OneRow(f.job)}, Routing::kShardPerRow,
           Use::kKnownGap,
           batch +
               "; the audit trail's before-image, locked: Citus runs SELECT ... FOR UPDATE in single-shard "
               "queries only",
           command)
      // On Citus (PgSession::citus), the same reads one belfry shard at a time: routed.
      .Add("kReadJobsInShardSql", q::kReadJobsInShardSql, {S, "{" + f.job + "}"}, Routing::kOneShard,
           Use::kRouted, "", none)
      .Add("kLockJobsInShardSql", q::kLockJobsInShardSql, {S, "{" + f.job + "}"}, Routing::kOneShard,
           Use::kRouted, "", none)
      .Add("kSetFireLimitsSql", q::kSetFireLimitsSql,
           {OneRow(f.job, R"(,"fires_before":0,"fires_from":0,"start":null,"end":null)")},
           Routing::kShardPerRow, Use::kKnownGap, batch, command)
      .Copy("job_changes", Routing::kNoShardColumn, Use::kKnownGap,
            "the audit trail's rows, written in the command's transaction; job_changes: " + no_shard_column +
                ", and change_id is a sequence the publisher reads in order",
            command)
      .Add("kJobsInTheirShardsSql", q::kJobsInTheirShardsSql, {OneRow(f.job)}, Routing::kShardPerRow,
           Use::kKnownGap, batch + " (the batch's trigger commands)", command)
      // One-shot commands, manual fires, a bulk trigger's step and retries: the placing shard_state
      // rows locked with their progress, which the inserts then take with each row.
      .Add("kLockPlacingShardStatesSql", q::kLockPlacingShardStatesSql,
           {"{" + S + "," + N(F::kOtherShard) + "}", "2026-01-01 00:00:00+00"}, Routing::kShardSet,
           Use::kKnownGap,
           "locks the shard_state rows that place the batch's one-shots, manual rows or retries (FOR SHARE, in shard "
           "order) and reads their progress: Citus prunes `shard = ANY($1)` to those shards, and runs SELECT "
           "... FOR SHARE in single-shard queries only; on Citus kLockPlacingShardStateSql instead",
           {Phase::kCommand, Phase::kExecutions}, {}, {F::kShard, F::kOtherShard})
      // On Citus (PgSession::citus), the same one shard at a time: routed.
      .Add("kLockPlacingShardStateSql", q::kLockPlacingShardStateSql, {S, "2026-01-01 00:00:00+00"},
           Routing::kOneShard, Use::kRouted, "", none)
      .Add("kInsertManualRowsSql", q::kInsertManualRowsSql,
           {R"([{"id":")" + f.job + "#trigger#" + N(F::kMinute * 60'000) + R"(","job_id":")" + f.job +
            R"(","shard":)" + S + R"(,"run_minute":)" + N(F::kMinute + 1) + R"(,"late_limit":)" +
            N(F::kMinute + 15) + R"(,"step":0,"scheduled_for_ms":)" + N(F::kMinute * 60'000) +
            R"(,"src_partition":1,"src_offset":5,"placement_next_minute":)" + N(F::kMinute + 1) +
            R"(,"stored_next_minute":null,"cutover_minute":null}])"},
           Routing::kShardPerRow, Use::kKnownGap,
           batch + " (the rows of the batch's trigger and backfill commands)", command)
      .Add("kGetJobInShardSql", q::kGetJobInShardSql, {f.job, S}, Routing::kOneShard, Use::kRouted, "",
           {Phase::kCommand, Phase::kClusterWide})
      .Add("kGetJobSql", q::kGetJobSql, {f.job}, Routing::kAllShards, Use::kKnownGap,
           "looks a job up by id in every shard; sent only after kGetJobInShardSql missed (a backfill or "
           "trigger "
           "of a job that does not exist, or one stored under another shard count)",
           {Phase::kCommand, Phase::kClusterWide})
      .Add("kCoveredBackfillsSql", q::kCoveredBackfillsSql,
           {f.job, N(F::kMinute * 60'000 - 3'600'000), N(F::kMinute * 60'000)}, Routing::kNoShardColumn,
           Use::kKnownGap, "backfills: " + no_shard_column, command)
      .Add("kRecordBackfillSql", q::kRecordBackfillSql,
           {f.job, N(F::kMinute * 60'000 - 3'600'000), N(F::kMinute * 60'000), "12", "60", "1", "7"},
           Routing::kNoShardColumn, Use::kKnownGap, "backfills: " + no_shard_column, command)
      .Add("kAcceptBulkOpSql", q::kAcceptBulkOpSql,
           {"bulk-route", "pause", "route-owner", std::nullopt, "", "", "false", "0", "77",
            N(F::kMinute * 60'000)},
           Routing::kLocal, Use::kRouted, "", command)
      .Add("kBulkOpSourceSql", q::kBulkOpSourceSql, {"bulk-route"}, Routing::kLocal, Use::kRouted, "", none)
      .Add("pqxx: BEGIN", "BEGIN", {}, Routing::kNoTable, Use::kRouted, "",
           {Phase::kCommand, Phase::kExecutions, Phase::kClusterWide})
      .Add("pqxx read_transaction: SET TRANSACTION", "SET TRANSACTION READ ONLY", {}, Routing::kNoTable,
           Use::kRouted, "", cluster);

  // ---- Execution reports: PgExecutionStore::ApplyReports, retries. ----
  const std::vector<std::string> execution_stage = {ExecutionStageRow(f), JobStatsStageRow(f)};
  c.Add("kExecutionStagesExistSql", q::kExecutionStagesExistSql, {}, Routing::kNoTable, Use::kRouted, "",
        executions)
      .Add("kCreateExecutionStagesSql", q::kCreateExecutionStagesSql, {}, Routing::kNoTable, Use::kRouted, "",
           executions)
      .Copy("belfry_execution_stage", Routing::kLocal, Use::kRouted, "", executions)
      .Copy("belfry_job_stats_stage", Routing::kLocal, Use::kRouted, "", executions)
      .Add("kInsertStagedExecutionsSql", q::kInsertStagedExecutionsSql, {}, Routing::kNoShardColumn,
           Use::kKnownGap, "executions: " + no_shard_column, executions, execution_stage)
      .Add("kLockJobStatsSql", q::kLockJobStatsSql, {"{" + f.job + "}"}, Routing::kNoShardColumn,
           Use::kKnownGap,
           "job_stats: " + no_shard_column +
               "; FOR UPDATE over several jobs is also single-shard-only on Citus",
           executions)
      // On Citus (PgSession::citus), the same one job at a time: job_stats is distributed by job_id
      // there (migration 0019), so each is a router query.
      .Add("kLockJobStatsOfJobSql", q::kLockJobStatsOfJobSql, {f.job}, Routing::kNoShardColumn, Use::kKnownGap,
           "job_stats: " + no_shard_column + "; on Citus one statement per job of the batch", none)
      .Add("kUpsertStagedJobStatsSql", q::kUpsertStagedJobStatsSql, {}, Routing::kNoShardColumn,
           Use::kKnownGap, "job_stats: " + no_shard_column, executions, execution_stage)
      .Add("kSupersedeRetriesSql", q::kSupersedeRetriesSql,
           {R"([{"job_id":")" + f.job + R"(","scheduled_for_ms":)" + slot + "}]"}, Routing::kAllShards,
           Use::kKnownGap,
           "finds a job's retry rows by retry_of alone: every shard's jobs_retry_of_idx. The report does not "
           "carry the shard; ShardForId(job_id) would give it (a retry row lives in its job's shard)",
           executions)
      .Add("kRetryTargetsSql", q::kRetryTargetsSql, {"{" + f.job + "}"}, Routing::kAllShards, Use::kKnownGap,
           "reads the failed jobs by `id = ANY($1)` alone: every shard's primary key. ShardForId(job_id) "
           "would "
           "give each one's shard",
           executions)
      // The retries' placement: the layout lock and the layout with the transaction's now()
      // (above), the placing shard_state rows locked with their progress
      // (kLockPlacingShardStatesSql), then the rows.
      .Add(
          "kInsertRetriesSql", q::kInsertRetriesSql,
          {R"([{"id":")" + f.job + "#retry#" + slot + R"(#1","shard":)" + S +
           R"(,"interval_minutes":5,"owner":"","topic":"t","key":"k","details":"{}","priority":0,"run_at_ms":)" +
           N(F::kMinute * 60'000 + 120'000) + R"(,"run_minute":)" + N(F::kMinute + 2) +
           R"(,"scheduled_for_ms":)" + slot + R"(,"attempt":1,"retry_of":")" + f.job +
           R"(","placement_next_minute":)" + N(F::kMinute + 1) +
           R"(,"cutover_minute":null,"stored_next_minute":null}])"},
          Routing::kShardPerRow, Use::kKnownGap, "the batch of reports spans shards; " + batch, executions);

  // ---- Cluster-wide: admin reads, listings, sweeps, the publisher, bulk walks, migrations. ----
  const std::string owner_list = admin + "; merges every shard's (owner, id) index in id order";
  c.Add("kListJobsSql", q::kListJobsSql, {"", "50"}, Routing::kAllShards, Use::kAllowed, admin, cluster)
      .Add("kListJobsByOwnerSql", q::kListJobsByOwnerSql, {"", "50", "route-owner"}, Routing::kAllShards,
           Use::kAllowed, owner_list, cluster)
      .Add("kListJobsByTopicSql", q::kListJobsByTopicSql, {"", "50", "t"}, Routing::kAllShards, Use::kAllowed,
           admin, cluster)
      .Add("kListJobsByOwnerTopicSql", q::kListJobsByOwnerTopicSql, {"", "50", "route-owner", "t"},
           Routing::kAllShards, Use::kAllowed, owner_list, cluster)
      .Add("kListJobsByLabelsSql", q::kListJobsByLabelsSql, {"", "50", "", "", R"({"team":"route"})"},
           Routing::kAllShards, Use::kAllowed, admin, cluster)
      .Add("kListJobsByPrefixSql", q::kListJobsByPrefixSql, {"", "50", "route", "", "", "{}", "rouu"},
           Routing::kAllShards, Use::kAllowed, admin + "; an id prefix is a range of every shard's index", cluster)
      .Add("kListJobsByPrefixFilterSql", q::kListJobsByPrefixFilterSql, {"", "50", "route", "", "", "{}"},
           Routing::kAllShards, Use::kAllowed, admin + "; on a collation that is not byte-wise", none)
      .Add("GetJobViewInPartitionSql(7)", q::GetJobViewInPartitionSql(F::kShard), {f.job},
           Routing::kNoShardColumn, Use::kAllowed,
           "the job view names its shard's partition (jobs_shard_007: one shard), and joins job_stats, which "
           "has no shard column",
           cluster)
      .Add("kGetJobViewInShardSql", q::kGetJobViewInShardSql, {f.job, S}, Routing::kNoShardColumn,
           Use::kAllowed, "as GetJobViewInPartitionSql, for shards beyond the 120 partitions", none)
      .Add("kGetJobViewSql", q::kGetJobViewSql, {f.job}, Routing::kAllShards, Use::kAllowed,
           "the job view's fallback after a miss in its shard: by id in every shard", cluster)
      .Add("kGetDeliveryErrorSql", q::kGetDeliveryErrorSql, {f.job}, Routing::kNoShardColumn, Use::kAllowed,
           "the job view's last delivery error: trigger_delivery_errors (migration 0017) is keyed by job id "
           "and has no shard column",
           cluster)
      .Add("kRecordDeliveryErrorSql", q::kRecordDeliveryErrorSql, {f.job, "out.small", "1", "e", "2"},
           Routing::kNoShardColumn, Use::kKnownGap,
           "a trigger the broker refused for good (rare; never on the healthy firing path): "
           "trigger_delivery_errors has no shard column",
           none)
      .Add("kCountJobsSql", q::kCountJobsSql, {}, Routing::kAllShards, Use::kAllowed, admin, none)
      // `belfry explain`: the tick's own statements (the fixture has a calendar job: the cron ones).
      .Add("kDueJobsCursor.explain_sql", q::kDueJobsCursor.explain_sql, tick, Routing::kOneShard, Use::kRouted,
           "", none)
      .Add("kDueJobsHighCursor.explain_sql", q::kDueJobsHighCursor.explain_sql, tick, Routing::kOneShard,
           Use::kRouted, "", none)
      .Add("kDueJobsLowCursor.explain_sql", q::kDueJobsLowCursor.explain_sql, tick, Routing::kOneShard,
           Use::kRouted, "", none)
      .Add("kDueJobsWithCronCursor.explain_sql", q::kDueJobsWithCronCursor.explain_sql, cron_tick,
           Routing::kOneShard, Use::kRouted, "", cluster)
      .Add("kDueJobsHighWithCronCursor.explain_sql", q::kDueJobsHighWithCronCursor.explain_sql, cron_tick,
           Routing::kOneShard, Use::kRouted, "", cluster)
      .Add("kDueJobsLowWithCronCursor.explain_sql", q::kDueJobsLowWithCronCursor.explain_sql, cron_tick,
           Routing::kOneShard, Use::kRouted, "", cluster)
      .Add("kDueJobsRangeCursor.explain_sql", q::kDueJobsRangeCursor.explain_sql, range_tick, Routing::kOneShard,
           Use::kRouted, "", none)
      .Add("kDueJobsRangeWithCronCursor.explain_sql", q::kDueJobsRangeWithCronCursor.explain_sql,
           cron_range_tick, Routing::kOneShard, Use::kRouted, "", none)
      .Add("ReadLoadGroups: SET TRANSACTION", "SET TRANSACTION READ ONLY ISOLATION LEVEL REPEATABLE READ", {},
           Routing::kNoTable, Use::kRouted, "", cluster)
      .Add("kLoadStatementTimeoutSql", q::kLoadStatementTimeoutSql, {}, Routing::kNoTable, Use::kRouted, "",
           cluster)
      .Add("kLoadCustomPlanSql", q::kLoadCustomPlanSql, {}, Routing::kNoTable, Use::kRouted, "", cluster);
  const P load_jobs = {N(F::kMinute * 60'000), N((F::kMinute + 60) * 60'000), M, N(F::kMinute + 59), "1001"};
  const P load_calendar = {N(F::kMinute * 60'000), N((F::kMinute + 60) * 60'000), "1001"};
  const std::string load =
      "the load projection (`belfry load`, GET /v1/load): one full read of the jobs, grouped";
  for (size_t i = 0; i < std::size(q::kLoadJobGroupsSql); ++i) {
    const std::set<Phase> driven = i < 2 ? cluster : none;
    // [3], by a label's value, takes the label's key last.
    P jobs_params = load_jobs;
    P calendar_params = load_calendar;
    if (i == 3) {
      jobs_params.push_back("carrier");
      calendar_params.push_back("carrier");
    }
    c.Add("kLoadJobGroupsSql[" + N(static_cast<int64_t>(i)) + "]", q::kLoadJobGroupsSql[i], jobs_params,
          Routing::kAllShards, Use::kAllowed, load, driven)
        .Add("kLoadCalendarGroupsSql[" + N(static_cast<int64_t>(i)) + "]", q::kLoadCalendarGroupsSql[i],
             calendar_params, Routing::kAllShards, Use::kAllowed, load, driven);
  }
  c.Add("kOffsetLoadsSql", q::kOffsetLoadsSql, {}, Routing::kAllShards, Use::kAllowed,
        "`belfry rebalance`: every interval job, grouped by (interval, offset)", cluster)
      .Add("kMovableJobIdsSql", q::kMovableJobIdsSql, {"5", "1", "10"}, Routing::kAllShards, Use::kAllowed,
           "`belfry rebalance`: example ids of one (interval, offset)", cluster)
      .Add("kSweepOneShotsSql", q::kSweepOneShotsSql, {M, "10000"}, Routing::kAllShards, Use::kAllowed,
           "the one-shot retention sweep (minutes): fired one-shots of every shard, by jobs_run_minute_idx",
           cluster)
      // Bulk operations: recorded on the coordinator, walked one shard at a time.
      .Add("kClaimBulkOpSql", q::kClaimBulkOpSql, {}, Routing::kLocal, Use::kRouted, "", cluster)
      .Add("kBulkCountSql", q::kBulkCountSql, {S, "route-owner", std::nullopt}, Routing::kOneShard,
           Use::kRouted, "", cluster)
      .Add("kBulkPageSql", q::kBulkPageSql, {S, "", "route-owner", std::nullopt, "1000"}, Routing::kOneShard,
           Use::kRouted, "", cluster)
      .Add("kRecordBulkStepSql", q::kRecordBulkStepSql, {"bulk-route", "8", "", "0", "0", "false"},
           Routing::kLocal, Use::kRouted, "", cluster)
      .Add("kUnpublishedBulkOpsSql", q::kUnpublishedBulkOpsSql, {"10"}, Routing::kLocal, Use::kRouted, "",
           cluster)
      .Add("kMarkBulkOpPublishedSql", q::kMarkBulkOpPublishedSql, {"bulk-route", N(F::kMinute * 60'000)},
           Routing::kLocal, Use::kRouted, "", cluster)
      .Add("kGetBulkOpSql", q::kGetBulkOpSql, {"bulk-route"}, Routing::kLocal, Use::kRouted, "", cluster)
      .Add("kListBulkOpsSql", q::kListBulkOpsSql, {"10"}, Routing::kLocal, Use::kRouted, "", cluster)
      // The audit trail's reads and the publisher.
      .Add("kListJobChangesSql", q::kListJobChangesSql, {f.job, "9223372036854775807", "50"},
           Routing::kNoShardColumn, Use::kAllowed,
           "admin read of one job's changes; job_changes: " + no_shard_column, cluster)
      .Add("kJobChangesSinceSql", q::kJobChangesSinceSql, {f.job, "1"}, Routing::kNoShardColumn, Use::kAllowed,
           "admin read: the changes after a page, which its whole views are built from; job_changes: " +
               no_shard_column,
           none)
      .Add("kLaterChangesOfJobsSql", q::kLaterChangesOfJobsSql, {R"([")" + f.job + R"("])", "1"},
           Routing::kNoShardColumn, Use::kAllowed,
           "the change publisher: its jobs' changes after its batch, which the events' whole views are built "
           "from; job_changes: " + no_shard_column,
           cluster)
      .Add("pqxx: SET TRANSACTION", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", {},
           Routing::kNoTable, Use::kRouted, "", cluster)
      .Add("kLockChangePublisherSql", q::kLockChangePublisherSql, {N(q::kChangePublisherLockKey)},
           Routing::kNoTable, Use::kRouted, "", cluster)
      .Add("kUnlockChangePublisherSql", q::kUnlockChangePublisherSql, {N(q::kChangePublisherLockKey)},
           Routing::kNoTable, Use::kAllowed,
           "the change publisher's session advisory lock (as `belfry migrate`'s), on the coordinator", cluster)
      .Add("kUnpublishedChangesSql", q::kUnpublishedChangesSql, {"100"}, Routing::kNoShardColumn,
           Use::kAllowed,
           "the change publisher: the oldest unpublished changes of the whole cluster, in change_id order",
           cluster)
      .Add("kMarkChangesPublishedSql", q::kMarkChangesPublishedSql, {"{1,2}"}, Routing::kNoShardColumn,
           Use::kAllowed, "the change publisher marks what it published", cluster)
      .Add("kSweepJobChangesSql", q::kSweepJobChangesSql, {N(F::kMinute * 60'000), "10000"},
           Routing::kNoShardColumn, Use::kAllowed, "the audit trail's retention sweep", cluster)
      // Re-planning calendar jobs after a tzdata change (start-up).
      .Add("kTzdataVersionSql", q::kTzdataVersionSql, {}, Routing::kLocal, Use::kRouted, "", cluster)
      .Add("kSetTzdataVersionSql", q::kSetTzdataVersionSql, {"2026a"}, Routing::kReferenceWrite,
           Use::kAllowed, "records the tz database's version in belfry_meta, once per version", cluster)
      .Add("kIntervalCalendarJobsSql", q::kIntervalCalendarJobsSql, {}, Routing::kAllShards, Use::kAllowed,
           "the re-plan after a tzdata change reads every calendar job stored as an interval", cluster)
      .Add("kReplanJobSql", q::kReplanJobSql, {S, f.cron_job, "60", "0", "0 9 * * MON-FRI", "Europe/Berlin"},
           Routing::kOneShard, Use::kRouted, "", none)
      .Add("kRegisterZoneSql", q::kRegisterZoneSql, {"Europe/Berlin"}, Routing::kReferenceWrite,
           Use::kAllowed,
           "numbers a new time zone in cron_zones (reference table), during the tzdata re-plan", none)
      .Add("kInsertJobSlotsSql", q::kInsertJobSlotsSql,
           {S, f.cron_job, "{0}", "512", "-2", "8190", "62", "false", "Europe/Berlin"}, Routing::kOneShard,
           Use::kRouted, "", none)
      // The execution history's admin reads and sweep.
      .Add("kListExecutionsSql", q::kListExecutionsSql, {f.job, "51"}, Routing::kNoShardColumn, Use::kAllowed,
           "admin read of one job's history; executions: " + no_shard_column, cluster)
      .Add("kListExecutionsAfterSql", q::kListExecutionsAfterSql, {f.job, "51", slot, "0", "failed"},
           Routing::kNoShardColumn, Use::kAllowed,
           "admin read of one job's history; executions: " + no_shard_column, cluster)
      .Add("kGetJobStatsSql", q::kGetJobStatsSql, {f.job}, Routing::kNoShardColumn, Use::kAllowed,
           "admin read of one job's counters; job_stats: " + no_shard_column, cluster)
      .Add("kMaintainExecutionPartitionsSql", q::kMaintainExecutionPartitionsSql,
           {N(F::kMinute * 60'000), N(7LL * 86'400'000), "3"}, Routing::kNoTable, Use::kAllowed,
           "the history sweep: a PL/pgSQL function that creates and drops daily partitions (DDL, through the "
           "coordinator); the plan shows only the function call",
           cluster)
      // Migrations and the schema check.
      .Add("kMigrationLockSql", q::kMigrationLockSql, {N(q::kMigrationLockKey)}, Routing::kNoTable,
           Use::kAllowed, "`belfry migrate`: a session advisory lock, on the coordinator", cluster)
      .Add("kMigrationUnlockSql", q::kMigrationUnlockSql, {N(q::kMigrationLockKey)}, Routing::kNoTable,
           Use::kAllowed, "`belfry migrate`", cluster)
      .Add("kCreateSchemaMigrationsSql", q::kCreateSchemaMigrationsSql, {}, Routing::kNoTable, Use::kAllowed,
           "`belfry migrate`: DDL, through the coordinator", cluster)
      .Add("kSchemaMigrationsExistsSql", q::kSchemaMigrationsExistsSql, {}, Routing::kNoTable, Use::kRouted,
           "", cluster)
      .Add("kAppliedMigrationsSql", q::kAppliedMigrationsSql, {}, Routing::kLocal, Use::kRouted, "", cluster)
      .Add("kRecordMigrationSql", q::kRecordMigrationSql, {"99", "0099_route"}, Routing::kLocal, Use::kRouted,
           "", none)
      .Add("kInsertShardCountSql", q::kInsertShardCountSql, {"120"}, Routing::kReferenceWrite, Use::kAllowed,
           "`belfry migrate`: records shard_count in belfry_meta", cluster)
      .Add("kInsertLayoutSql", q::kInsertLayoutSql, {"120"}, Routing::kReferenceWrite, Use::kAllowed,
           "`belfry migrate`: records the shard layout in belfry_meta", cluster)
      .Add("kInsertShardStatesSql", q::kInsertShardStatesSql, {"120"}, Routing::kShardPerRow, Use::kAllowed,
           "`belfry migrate`: one shard_state row per shard", cluster, {}, {F::kShard})
      .Add("kCitusDistributeExistsSql", q::kCitusDistributeExistsSql, {}, Routing::kNoTable, Use::kRouted, "",
           cluster)
      .Add("kCitusDistributeSql", q::kCitusDistributeSql, {}, Routing::kNoTable, Use::kAllowed,
           "`belfry migrate`: a PL/pgSQL function that distributes the tables once on Citus (DDL, through the "
           "coordinator) and returns at once on a plain PostgreSQL",
           cluster);
  return c.Take();
}

}  // namespace belfry
