// PgJobStore's manual fires (docs/manual-fires.md): trigger and backfill commands, and a
// backfill's dry run.
#include "pg/pg_job_store.h"

#include <algorithm>
#include <pqxx/result>
#include <pqxx/transaction>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "core/manual_fire.h"
#include "core/shard_layout.h"
#include "pg/array_literal.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_job_change_log.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_job_writes.h"
#include "pg/pg_manual_fire_queries.h"
#include "pg/pg_rows.h"

namespace belfry {
namespace {

// A trigger's or backfill's detail in the audit trail: what it stored.
std::string ManualFireDetail(const ManualFire& f, const ManualFireResult& r) {
  if (f.kind == ManualFire::Kind::kTrigger) return fmt::format("{{\"slots\":{}}}", r.slots);
  std::string out = fmt::format("{{\"slots\":{},\"covered\":{},\"from\":", r.slots, r.covered);
  AppendJsonTimeOrNull(&out, f.backfill.from_ms);
  out.append(",\"to\":");
  AppendJsonTimeOrNull(&out, f.backfill.to_ms);
  fmt::format_to(std::back_inserter(out), ",\"ratePerMinute\":{}}}", f.backfill.rate_per_minute);
  return out;
}

std::vector<std::pair<EpochMs, EpochMs>> CoveredRanges(pqxx::transaction_base& txn, const ManualFire& f) {
  std::vector<std::pair<EpochMs, EpochMs>> out;
  for (const pqxx::row& row :
       txn.exec_prepared(pg_queries::kCoveredBackfillsName, f.id, f.backfill.from_ms, f.backfill.to_ms)) {
    out.emplace_back(row[0].as<int64_t>(), row[1].as<int64_t>());
  }
  return out;
}

// What `f` stores for `job` (core/manual_fire.h), without storing it.
struct ManualPlan {
  ManualFireResult result;
  std::vector<ManualRow> rows;
};

ManualPlan PlanManualFire(pqxx::transaction_base& txn, const ManualFire& f,
                          const std::optional<StoredJob>& job, const ShardLayout& layout,
                          const TimeZoneDatabase& time_zones) {
  ManualPlan plan;
  if (!job) {
    plan.result.status = Status::NotFound(fmt::format("job {} does not exist", f.id));
    return plan;
  }
  const ManualFireRules rules{layout, f.max_late_ms};
  if (f.kind == ManualFire::Kind::kTrigger) {
    plan.rows.push_back(PlanManualTrigger(job->spec.id, job->spec.shard, f.source.timestamp_ms, rules));
    plan.result.slots = 1;
    return plan;
  }
  BackfillPlan backfill =
      PlanBackfill(time_zones, job->spec, f.backfill, CoveredRanges(txn, f), f.source.timestamp_ms, rules);
  plan.result = ManualFireResult{backfill.status, backfill.slots, backfill.covered};
  plan.rows = std::move(backfill.rows);
  return plan;
}

// One derived row to store, for the job `job_id` of `shard`.
struct RowToStore {
  const ManualRow* row = nullptr;
  std::string_view job_id;
  int32_t shard = 0;
  SourcePosition source;
  int64_t step = 0;  // minutes after its fire's first row (a backfill's pace)
};

// Stores the rows (one set-based statement per chunk); returns the ids that were new.
std::unordered_set<std::string> InsertManualRows(pqxx::transaction_base& txn, const std::vector<RowToStore>& rows,
                                                 const ShardLayout& layout, const PlacingShardProgress& progress) {
  const std::optional<int64_t> cutover_minute = PendingCutoverMinute(layout);
  JsonArrayChunks chunks;
  for (const RowToStore& r : rows) {
    chunks.BeginObject();
    chunks.String("id", r.row->row_id);
    chunks.String("job_id", r.job_id);
    chunks.Int("shard", r.shard);
    chunks.Int("run_minute", r.row->run_minute);
    chunks.Int("late_limit", r.row->late_limit_minute);
    chunks.Int("step", r.step);
    chunks.Int("scheduled_for_ms", r.row->scheduled_for_ms);
    chunks.Int("src_partition", r.source.partition);
    chunks.Int("src_offset", r.source.offset);
    chunks.OptionalInt("placement_next_minute",
                       NextMinuteOf(progress, FiringShardRow(layout, r.row->run_minute, r.shard)));
    if (cutover_minute) chunks.OptionalInt("stored_next_minute", NextMinuteOf(progress, r.shard));
    chunks.OptionalInt("cutover_minute", cutover_minute);
    chunks.EndObject();
  }
  std::unordered_set<std::string> inserted;
  for (const std::string& chunk : chunks.Finish()) {
    for (const pqxx::row& row : txn.exec_prepared(pg_queries::kInsertManualRowsName, chunk)) {
      inserted.insert(row[0].as<std::string>());
    }
  }
  return inserted;
}

}  // namespace

std::vector<size_t> ApplyTriggersSetBased(pqxx::transaction_base& txn, const std::vector<ManualFire>& fires,
                                          const ShardLayout& layout, const PlacingShardProgress& progress,
                                          std::vector<ManualFireResult>* results) {
  std::vector<size_t> rest;
  std::vector<size_t> triggers;
  JsonArrayChunks lookups;
  std::unordered_set<std::string> asked;
  for (size_t i = 0; i < fires.size(); ++i) {
    if (fires[i].kind != ManualFire::Kind::kTrigger) {
      rest.push_back(i);
      continue;
    }
    triggers.push_back(i);
    if (!asked.insert(fires[i].id).second) continue;
    lookups.BeginObject();
    lookups.String("id", fires[i].id);
    lookups.Int("shard", StoredShard(fires[i].id, layout));
    lookups.EndObject();
  }
  if (triggers.empty()) return rest;
  std::unordered_set<std::string> found;
  for (const std::string& chunk : lookups.Finish()) {
    for (const pqxx::row& row : txn.exec_prepared(pg_queries::kJobsInTheirShardsName, chunk)) {
      found.insert(row[0].as<std::string>());
    }
  }
  std::vector<ManualRow> planned;
  planned.reserve(triggers.size());
  std::vector<RowToStore> rows;
  rows.reserve(triggers.size());
  std::vector<size_t> stored;  // fires[stored[k]] has planned[k], stored as rows[k]
  for (size_t i : triggers) {
    const ManualFire& f = fires[i];
    if (found.count(f.id) == 0) {
      rest.push_back(i);
      continue;
    }
    const int32_t shard = StoredShard(f.id, layout);
    planned.push_back(PlanManualTrigger(f.id, shard, f.source.timestamp_ms, ManualFireRules{layout, f.max_late_ms}));
    rows.push_back(RowToStore{nullptr, f.id, shard, f.source, 0});
    stored.push_back(i);
  }
  for (size_t k = 0; k < rows.size(); ++k) rows[k].row = &planned[k];  // `planned` no longer grows
  std::unordered_set<std::string> inserted =
      rows.empty() ? std::unordered_set<std::string>() : InsertManualRows(txn, rows, layout, progress);
  for (size_t k = 0; k < planned.size(); ++k) {
    // Two triggers of one job in the same millisecond are one row: the first of them stored it.
    (*results)[stored[k]].slots = inserted.erase(planned[k].row_id) > 0 ? 1 : 0;
  }
  std::sort(rest.begin(), rest.end());
  return rest;
}

StatusOr<std::vector<ManualFireResult>> PgJobStore::ApplyManualFires(const std::vector<ManualFire>& fires) {
  std::vector<ManualFireResult> results;
  if (fires.empty()) return results;
  Status st = session_.Run("apply triggers and backfills", [&](pqxx::connection& conn) {
    results.assign(fires.size(), ManualFireResult{});
    pqxx::work txn(conn, "apply_manual_fires");
    if (Status st = LoadLayout(txn, true); !st.ok()) return st;
    // The rows are placed by their firing shards' progress, like one-shots: hold those rows, in
    // shard order, from before that read until the commit (ApplyActions does the same).
    std::vector<int32_t> shards;
    for (const ManualFire& f : fires) {
      for (int32_t row : PlacingShardRows(layout_, StoredShard(f.id, layout_))) shards.push_back(row);
    }
    std::sort(shards.begin(), shards.end());
    shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
    PlacingShardProgress progress;
    LockPlacingShardStates(txn, session_.citus(), txn_now_, shards, &progress);
    for (size_t i : ApplyTriggersSetBased(txn, fires, layout_, progress, &results)) {
      const ManualFire& f = fires[i];
      const std::optional<StoredJob> job = ReadJobInTxn(txn, f.id, layout_);
      ManualPlan plan = PlanManualFire(txn, f, job, layout_, time_zones_);
      results[i] = plan.result;
      if (!plan.result.status.ok() || f.backfill.dry_run) continue;
      // A job stored under another shard: its rows too, after the others (held ones are skipped).
      LockPlacingShardStates(txn, session_.citus(), txn_now_, PlacingShardRows(layout_, job->spec.shard),
                             &progress);
      std::vector<RowToStore> rows;
      rows.reserve(plan.rows.size());
      for (const ManualRow& row : plan.rows) {
        rows.push_back(RowToStore{&row, job->spec.id, job->spec.shard, f.source, row.run_minute - plan.rows.front().run_minute});
      }
      const int64_t inserted =
          rows.empty() ? 0 : static_cast<int64_t>(InsertManualRows(txn, rows, layout_, progress).size());
      results[i].slots = inserted;
      if (f.kind == ManualFire::Kind::kBackfill) {
        txn.exec_prepared(pg_queries::kRecordBackfillName, f.id, f.backfill.from_ms, f.backfill.to_ms, inserted,
                          f.backfill.rate_per_minute, f.source.partition, f.source.offset);
      }
    }
    JobChangeLog changes(session_.citus());  // the fires that stored rows (a replay stores none)
    for (size_t i = 0; i < fires.size(); ++i) {
      const ManualFire& f = fires[i];
      if (!results[i].status.ok() || results[i].slots == 0 || f.backfill.dry_run) continue;
      JobChange c;
      c.op = f.kind == ManualFire::Kind::kTrigger ? "trigger" : "backfill";
      c.actor = f.actor;
      c.reason = f.reason;
      c.source = f.source;
      c.detail_json = ManualFireDetail(f, results[i]);
      changes.Add(StoredShard(f.id, layout_), f.id, std::move(c));
    }
    changes.RecordAfter(txn);
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return results;
}

StatusOr<ManualFireResult> PgJobStore::CountBackfill(const ManualFire& fire) {
  ManualFireResult result;
  Status st = session_.Run("count backfill", [&](pqxx::connection& conn) {
    pqxx::read_transaction txn(conn);
    if (Status st = LoadLayout(txn, false); !st.ok()) return st;
    ManualFire dry = fire;
    dry.backfill.dry_run = true;
    result = PlanManualFire(txn, dry, ReadJobInTxn(txn, fire.id, layout_), layout_, time_zones_).result;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (result.status.code() == Status::Code::kNotFound) return result.status;
  return result;
}

}  // namespace belfry
