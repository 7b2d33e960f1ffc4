// PgJobStore's bulk operations (docs/bulk-operations.md): recording them from the command path,
// and walking their jobs in bounded steps. Each step changes its jobs through the command path's
// own statements (pg_job_writes.h, pg_command_queries.h) with source position -1, so that the jobs keep
// the position of their own last command.
#include <algorithm>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>

#include "core/bulk_walk.h"
#include "core/shard_layout.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_bulk_op_queries.h"
#include "pg/pg_command_queries.h"
#include "pg/pg_job_change_log.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_job_store.h"
#include "pg/pg_job_writes.h"
#include "pg/pg_rows.h"

namespace belfry {
namespace {

// A row of BELFRY_BULK_OP_COLUMNS.
BulkOpState BulkOpStateFromRow(const pqxx::row& r) {
  BulkOpState s;
  s.op.id = r[0].as<std::string>();
  s.op.op = CommandOpFromName(r[1].as<std::string>()).value_or(CommandOp::kPause);  // the table's CHECK
  if (!r[2].is_null()) s.op.selector.owner = r[2].as<std::string>();
  if (!r[3].is_null()) s.op.selector.labels_json = CanonicalLabels(r[3].as<std::string>());
  if (!r[4].is_null()) s.op.reason = r[4].as<std::string>();
  if (!r[5].is_null()) s.op.actor = r[5].as<std::string>();
  s.op.dry_run = r[6].as<bool>();
  s.op.source.partition = r[7].as<int32_t>();
  s.op.source.offset = r[8].as<int64_t>();
  s.op.source.timestamp_ms = r[9].as<int64_t>();
  s.accepted_at = r[10].as<int64_t>();
  s.next_shard = r[11].as<int32_t>();
  s.after_id = r[12].as<std::string>();
  s.matched = r[13].as<int64_t>();
  s.changed = r[14].as<int64_t>();
  s.steps = r[15].as<int64_t>();
  s.finished_at = OptionalInt64(r[16]);
  s.published_at = OptionalInt64(r[17]);
  return s;
}

std::optional<std::string> OwnerParam(const BulkSelector& s) { return s.owner; }
std::optional<std::string> LabelsParam(const BulkSelector& s) {
  if (s.labels_json.empty()) return std::nullopt;
  return s.labels_json;
}

// The operations a read of BELFRY_BULK_OP_COLUMNS with one parameter, a limit, returns.
StatusOr<std::vector<BulkOpState>> ReadBulkOps(PgSession& session, const char* what, const char* statement,
                                               int32_t limit) {
  std::vector<BulkOpState> out;
  Status st = session.Run(what, [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    out.clear();
    for (const pqxx::row& row : txn.exec_prepared(statement, limit)) out.push_back(BulkOpStateFromRow(row));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

// What a step's changes record in the audit trail: the bulk command's op, note and position.
JobChange BulkChange(const BulkOp& op, std::string detail_json = {}) {
  JobChange c;
  c.op = CommandOpName(op.op);
  c.bulk_id = op.id;
  c.actor = op.actor;
  c.reason = op.reason;
  c.source = op.source;
  c.detail_json = std::move(detail_json);
  return c;
}

// What one page did to its jobs: how many it changed (`txn_now`: PgJobStore::txn_now_; `citus`:
// PgSession::citus). Adds each job it may change to `changes` (the step records them all once its
// pages are done).
int64_t ApplyBulkPage(pqxx::transaction_base& txn, bool citus, const BulkOpState& state, int32_t shard,
                      const pqxx::result& page, EpochMs now, const std::string& txn_now, const ShardLayout& layout,
                      const TimeZoneDatabase& time_zones, JobChangeLog* changes) {
  namespace q = pg_queries;
  const BulkOp& op = state.op;
  if (op.op == CommandOp::kTrigger) {
    std::vector<ManualFire> fires;
    fires.reserve(page.size());
    for (const pqxx::row& row : page) {
      ManualFire& f = fires.emplace_back();
      f.kind = ManualFire::Kind::kTrigger;
      f.id = row[0].as<std::string>();
      f.source = SourcePosition{op.source.partition, op.source.offset, now};
    }
    if (fires.empty()) return 0;
    PlacingShardProgress progress;
    LockPlacingShardStates(txn, citus, txn_now, PlacingShardRows(layout, shard), &progress);
    std::vector<ManualFireResult> results(fires.size());
    ApplyTriggersSetBased(txn, fires, layout, progress, &results);  // the jobs are locked: all found
    int64_t stored = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      stored += results[i].slots;
      if (results[i].slots > 0) changes->Add(shard, fires[i].id, BulkChange(op, "{\"slots\":1}"));
    }
    return stored;
  }
  JsonArrayChunks rows;
  int64_t n = 0;
  for (const pqxx::row& row : page) {
    const bool paused = row[1].as<bool>();
    if (op.op == CommandOp::kPause && paused) continue;   // keeps its own pause and note
    if (op.op == CommandOp::kResume && !paused) continue;
    const auto id = row[0].as<std::string>();
    changes->Add(shard, id, BulkChange(op));
    rows.BeginObject();
    rows.String("id", id);
    rows.Int("shard", shard);
    rows.Int("src_partition", -1);  // the row keeps its own command's position
    rows.Int("src_offset", -1);
    if (op.op != CommandOp::kDelete) {
      rows.Bool("paused", op.op == CommandOp::kPause);
      rows.String("reason", op.reason);
      rows.String("actor", op.actor);
      rows.Int("ts", now);  // where a resumed limited job counts from
    }
    rows.EndObject();
    ++n;
  }
  if (n == 0) return 0;
  changes->ReadBefore(txn, /*lock=*/false);  // the page holds their locks already
  int64_t changed = 0;
  for (const std::string& chunk : rows.Finish()) {
    if (op.op == CommandOp::kDelete) {
      changed += DeleteJobsAndTheirRows(txn, chunk, changes);
    } else {
      RestartFireLimits(txn, txn.exec_prepared(q::kSetPausedName, chunk, txn_now), layout, time_zones);
    }
  }
  return op.op == CommandOp::kDelete ? changed : n;
}

}  // namespace

StatusOr<std::vector<Status>> PgJobStore::AcceptBulkOps(const std::vector<BulkOp>& ops) {
  std::vector<Status> results;
  if (ops.empty()) return results;
  Status st = session_.Run("accept bulk operations", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    results.assign(ops.size(), Status::Ok());
    pqxx::work txn(conn, "accept_bulk_ops");
    for (size_t i = 0; i < ops.size(); ++i) {
      const BulkOp& op = ops[i];
      const pqxx::result r =
          txn.exec_prepared(q::kAcceptBulkOpName, op.id, CommandOpName(op.op), OwnerParam(op.selector),
                            LabelsParam(op.selector), op.reason, op.actor, op.dry_run, op.source.partition,
                            op.source.offset, op.source.timestamp_ms);
      if (!r.empty()) continue;
      const pqxx::result prior = txn.exec_prepared(q::kBulkOpSourceName, op.id);
      if (!prior.empty() && prior[0][0].as<int32_t>() == op.source.partition &&
          prior[0][1].as<int64_t>() == op.source.offset) {
        continue;  // a replay of the command that recorded it
      }
      results[i] = Status::Invalid(
          "duplicate_bulk_id", "bulk operation id " + op.id + " was already used by the command at " +
                                   (prior.empty() ? std::string("?") : prior[0][0].as<std::string>() + "/" +
                                                                            prior[0][1].as<std::string>()) +
                                   "; give each bulk command its own id");
    }
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return results;
}

StatusOr<std::optional<BulkOpState>> PgJobStore::RunBulkStep(int32_t max_jobs, EpochMs now) {
  std::optional<BulkOpState> out;
  const int32_t page_limit = std::max(1, max_jobs);
  Status st = session_.Run("bulk operation step", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    out.reset();
    pqxx::work txn(conn, "bulk_step");
    if (Status s = LoadLayout(txn, true); !s.ok()) return s;
    const int32_t stored_shards = StoredShardCount(layout_);
    const pqxx::result claimed = txn.exec_prepared(q::kClaimBulkOpName);
    if (claimed.empty()) {
      txn.commit();
      return Status::Ok();
    }
    const BulkOpState state = BulkOpStateFromRow(claimed[0]);
    BulkWalkPosition pos{state.next_shard, state.after_id, state.next_shard >= stored_shards};
    int64_t matched = 0;
    int64_t changed = 0;
    int64_t budget = page_limit;
    int32_t shards = 0;
    JobChangeLog changes(session_.citus());  // the audit trail of every page of the step
    while (!pos.finished && budget > 0 && shards < kBulkShardsPerStep) {
      const int32_t shard = pos.shard;
      if (state.op.dry_run) {
        matched += txn.exec_prepared1(q::kBulkCountName, shard, OwnerParam(state.op.selector),
                                      LabelsParam(state.op.selector))[0]
                       .as<int64_t>();
        pos = NextBulkWalkShard(shard, stored_shards);
      } else {
        const int64_t limit = budget;
        const pqxx::result page =
            txn.exec_prepared(q::kBulkPageName, shard, pos.after_id, OwnerParam(state.op.selector),
                              LabelsParam(state.op.selector), static_cast<int32_t>(limit));
        matched += static_cast<int64_t>(page.size());
        changed += ApplyBulkPage(txn, session_.citus(), state, shard, page, now, txn_now_, layout_,
                                 time_zones_, &changes);
        budget -= static_cast<int64_t>(page.size());
        const std::string last = page.empty() ? std::string() : page.back()[0].as<std::string>();
        pos = NextBulkWalkPosition(shard, last, page.size(), static_cast<size_t>(limit), stored_shards);
      }
      if (pos.shard != shard) ++shards;
    }
    changes.RecordAfter(txn);
    const pqxx::result recorded = txn.exec_prepared(q::kRecordBulkStepName, state.op.id, pos.shard, pos.after_id,
                                                    matched, changed, pos.finished);
    txn.commit();
    out = BulkOpStateFromRow(recorded[0]);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::vector<BulkOpState>> PgJobStore::UnpublishedBulkOps(int32_t limit) {
  return ReadBulkOps(session_, "unpublished bulk operations", pg_queries::kUnpublishedBulkOpsName, limit);
}

Status PgJobStore::MarkBulkOpPublished(const std::string& id, EpochMs now) {
  return session_.Run("mark bulk operation published", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    txn.exec_prepared(pg_queries::kMarkBulkOpPublishedName, id, now);
    return Status::Ok();
  });
}

StatusOr<std::optional<BulkOpState>> PgJobStore::GetBulkOp(const std::string& id) {
  std::optional<BulkOpState> out;
  Status st = session_.Run("get bulk operation", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    const pqxx::result r = txn.exec_prepared(pg_queries::kGetBulkOpName, id);
    out.reset();
    if (!r.empty()) out = BulkOpStateFromRow(r[0]);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::vector<BulkOpState>> PgJobStore::ListBulkOps(int32_t limit) {
  return ReadBulkOps(session_, "list bulk operations", pg_queries::kListBulkOpsName, std::clamp(limit, 1, 1000));
}

}  // namespace belfry
