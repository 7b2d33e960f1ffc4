// PgJobStore's command path: ApplyActions, one transaction per batch of upserts, deletes and
// pauses, set-based (docs/storage.md, "Commands"; the SQL is in pg_command_queries.h).
#include "pg/pg_job_store.h"

#include <algorithm>
#include <map>
#include <set>
#include <pqxx/result>
#include <pqxx/stream_to>
#include <pqxx/transaction>
#include <utility>

#include "core/shard_layout.h"
#include "pg/array_literal.h"
#include "pg/copy_row.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_command_queries.h"
#include "pg/pg_job_change_log.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_job_writes.h"
#include "pg/pg_rows.h"
#include "pg/pg_placing_shard_states.h"

namespace belfry {
namespace {

// One row of the upsert staging table, as COPY text fields in kUpsertStageColumns order.
using StageRow = CopyRow<std::size(pg_queries::kUpsertStageColumns)>;

// `shard`: the job's stored shard (ActionShard), not spec.shard; `progress`: the placing
// shard_state rows of a one-shot, held (LockPlacingShardStates); unused for other jobs.
StageRow UpsertStageRow(const JobAction& a, int32_t shard, const ShardLayout& layout,
                        const PlacingShardProgress& progress) {
  const JobSpec& s = a.spec;
  StageRow row;
  size_t c = 0;  // kUpsertStageColumns order
  row.Set(c++, a.id);
  row.SetInt(c++, shard);
  row.SetInt(c++, s.interval_minutes);
  row.SetInt(c++, s.offset_minutes);
  // A limited job's end was computed from the offset it carries (docs/fire-limits.md): it keeps no
  // stored one.
  row.SetBool(c++, !a.replace_fresh && !s.offset_explicit && !s.max_fires);
  row.Set(c++, s.owner);
  row.Set(c++, s.topic);
  row.Set(c++, s.key);
  row.Set(c++, s.details_json.empty() ? std::string("{}") : s.details_json);
  row.SetOptionalInt(c++, s.start_at);
  row.SetOptionalInt(c++, s.end_at);
  row.SetInt(c++, s.priority);
  row.SetOptionalBool(c++, a.paused);
  row.SetBool(c++, a.replace_fresh);
  row.SetInt(c++, a.source.partition);
  row.SetInt(c++, a.source.offset);
  row.SetOptionalInt(c++, s.run_at);
  row.SetOptionalInt(c++, s.one_shot() ? std::optional<int64_t>(s.run_minute) : std::nullopt);
  row.SetInt(c++, s.late_limit_minute);
  row.SetOptionalInt(c++, s.one_shot() ? std::optional<int64_t>(s.scheduled_for_ms) : std::nullopt);
  row.SetInt(c++, s.max_retries);
  row.SetInt(c++, s.retry_backoff.initial_ms);
  row.Set(c++, fmt::format("{}", s.retry_backoff.multiplier));  // shortest exact round-trip form
  row.SetInt(c++, s.retry_backoff.max_ms);
  if (s.calendar) {
    row.Set(c++, s.calendar->cron);
    row.Set(c++, s.calendar->time_zone);
  } else {
    row.SetNull(c++);
    row.SetNull(c++);
  }
  if (s.calendar_slots()) {
    const CalendarSlots& slots = s.calendar->slots;
    row.Set(c++, ArrayLiteral(slots.codes));
    row.SetInt(c++, slots.hour_mask);
    row.SetInt(c++, slots.dom_mask);
    row.SetInt(c++, slots.month_mask);
    row.SetInt(c++, slots.dow_mask);
    row.SetBool(c++, slots.day_or);
  } else {
    for (int i = 0; i < 6; ++i) row.SetNull(c++);
  }
  row.SetBool(c++, s.offset_pinned);  // migration 0009
  row.Set(c++, a.pause_reason);       // migration 0010: used only when the action pauses
  row.Set(c++, a.pause_actor);
  // migration 0012: limited runs (NULLs for an unlimited job)
  row.SetOptionalInt(c++, s.max_fires ? std::optional<int64_t>(*s.max_fires) : std::nullopt);
  row.SetOptionalInt(c++, s.max_fires ? std::optional<int64_t>(s.fires_from_ms) : std::nullopt);
  row.SetOptionalInt(c++, s.max_fires ? s.requested_end_at : std::nullopt);
  row.SetOptionalInt(c++, s.max_fires ? s.requested_start_at : std::nullopt);
  row.Set(c++, s.labels_json.empty() ? std::string("{}") : s.labels_json);  // migration 0013
  if (s.one_shot()) {
    const std::optional<int64_t> cutover_minute = PendingCutoverMinute(layout);
    row.SetOptionalInt(c++, NextMinuteOf(progress, FiringShardRow(layout, s.run_minute, shard)));
    row.SetOptionalInt(c++, cutover_minute ? NextMinuteOf(progress, shard) : std::nullopt);
    row.SetOptionalInt(c++, cutover_minute);
  } else {
    for (int i = 0; i < 3; ++i) row.SetNull(c++);
  }
  return row;
}

struct ActionParams {
  std::vector<std::pair<int32_t, const JobAction*>> upserts;  // (stored shard, action), in (shard, id) order
  std::vector<int32_t> one_shot_shards;  // the shard_state rows that place the one-shot upserts, sorted
  bool any_calendar_slots = false;  // some upsert is a slot-planned cron job
  std::vector<std::string> deletes;
  std::vector<std::string> set_paused;
};

// The shard that stores the action's job, by the layout read in the action's transaction
// (docs/resharding.md). An upsert's spec.shard (ShardForId(id, shard_count), set by the parser)
// stands while no reshard is under way; during one, StoredShard(id, layout) replaces it.
int32_t ActionShard(const JobAction& a, const ShardLayout& layout) {
  if (a.kind == JobAction::Kind::kUpsert && layout.phase == ShardLayout::Phase::kStable) return a.spec.shard;
  return StoredShard(a.id, layout);
}

// What the audit trail records of `a` (docs/audit-trail.md): a batch's folded commands are one
// change, named after the kind of action they folded into.
JobChange ActionChange(const JobAction& a) {
  JobChange c;
  switch (a.kind) {
    case JobAction::Kind::kUpsert:
      c.op = "upsert";
      break;
    case JobAction::Kind::kDelete:
      c.op = "delete";
      break;
    case JobAction::Kind::kSetPaused:
      c.op = a.paused.value_or(false) ? "pause" : "resume";
      break;
  }
  c.actor = a.actor;
  c.reason = a.reason;
  c.source = a.source;
  return c;
}

ActionParams BuildActionParams(const std::vector<JobAction>& actions, const ShardLayout& layout) {
  // Rows are written in (shard, id) order: two transactions that touch the same jobs lock them in
  // the same order (fewer deadlocks when a consumer-group rebalance briefly overlaps two
  // consumers), and each statement works through one partition after another (jobs is
  // partitioned by shard), which made the staged INSERT ~30% faster than id order.
  std::vector<std::pair<int32_t, const JobAction*>> sorted;
  sorted.reserve(actions.size());
  for (const JobAction& a : actions) sorted.emplace_back(ActionShard(a, layout), &a);
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second->id < y.second->id;
  });

  ActionParams params;
  JsonArrayChunks deletes, set_paused;
  std::set<int32_t> one_shot_rows;  // the shard_state rows that place the one-shots: locked in order
  for (const auto& [shard, a] : sorted) {
    switch (a->kind) {
      case JobAction::Kind::kUpsert:
      {
        params.upserts.emplace_back(shard, a);
        params.any_calendar_slots |= a->spec.calendar_slots();
        if (a->spec.one_shot()) {
          for (int32_t row : PlacingShardRows(layout, shard)) one_shot_rows.insert(row);
        }
      }
        break;
      case JobAction::Kind::kDelete:
        deletes.BeginObject();
        deletes.String("id", a->id);
        deletes.Int("shard", shard);
        deletes.Int("src_partition", a->source.partition);
        deletes.Int("src_offset", a->source.offset);
        deletes.EndObject();
        break;
      case JobAction::Kind::kSetPaused:
        set_paused.BeginObject();
        set_paused.String("id", a->id);
        set_paused.Int("shard", shard);
        set_paused.Bool("paused", a->paused.value_or(false));
        set_paused.Int("src_partition", a->source.partition);
        set_paused.Int("src_offset", a->source.offset);
        set_paused.String("reason", a->pause_reason);
        set_paused.String("actor", a->pause_actor);
        set_paused.Int("ts", a->source.timestamp_ms);  // where a resumed limited job counts from
        set_paused.EndObject();
        break;
    }
  }
  params.deletes = deletes.Finish();
  params.set_paused = set_paused.Finish();
  params.one_shot_shards.assign(one_shot_rows.begin(), one_shot_rows.end());
  return params;
}

}  // namespace

Status PgJobStore::ApplyActions(const std::vector<JobAction>& actions) {
  if (actions.empty()) return Status::Ok();
  return session_.Run("apply actions", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    // Registering is idempotent in libpqxx; each new connection prepares them on first use,
    // by which time this transaction has created the staging table.
    conn.prepare(q::kInsertStagedJobsName, q::kInsertStagedJobsSql);
    conn.prepare(q::kUpdateStagedJobsName, q::kUpdateStagedJobsSql);
    conn.prepare(q::kRegisterStagedZonesName, q::kRegisterStagedZonesSql);
    conn.prepare(q::kDeleteStagedSlotsName, q::kDeleteStagedSlotsSql);
    conn.prepare(q::kInsertStagedSlotsName, q::kInsertStagedSlotsSql);
    pqxx::work txn(conn, "apply_actions");
    if (Status st = LoadLayout(txn, true); !st.ok()) return st;
    const ActionParams params = BuildActionParams(actions, layout_);
    // The audit trail reads each job before the batch changes it, locking the jobs in (shard, id)
    // order. A job the insert creates needs no such read (issue 34): a batch inserts first, then
    // reads only the jobs that were there. But a batch with one-shots locks their shards' rows
    // before the insert, and a job's row is always locked before a shard's (as a bulk step
    // does), so such a batch reads every job first, as before.
    const bool insert_first = params.one_shot_shards.empty();
    JobChangeLog changes(session_.citus());
    std::map<std::pair<int32_t, std::string>, const JobAction*> by_key;
    for (const JobAction& a : actions) by_key.emplace(std::make_pair(ActionShard(a, layout_), a.id), &a);
    auto read_before_the_rest = [&] {
      for (const auto& [key, a] : by_key) {
        if (!changes.Created(key.first, key.second)) changes.Add(key.first, key.second, ActionChange(*a));
      }
      changes.ReadBefore(txn);
    };
    if (!insert_first) read_before_the_rest();
    if (!params.upserts.empty()) {
      // One-shots are placed by their shard's progress (BELFRY_RUN_MINUTE): hold those shards'
      // rows from that read until the commit, so that no firing claims a minute between.
      PlacingShardProgress progress;
      LockPlacingShardStates(txn, session_.citus(), txn_now_, params.one_shot_shards, &progress);
      if (!txn.exec_prepared(q::kUpsertStageExistsName)[0][0].as<bool>()) txn.exec(q::kCreateUpsertStageSql);
      {
        pqxx::stream_to stage(
            txn, q::kUpsertStageTable,
            std::vector<std::string>(std::begin(q::kUpsertStageColumns), std::end(q::kUpsertStageColumns)));
        for (const auto& [shard, a] : params.upserts) stage << UpsertStageRow(*a, shard, layout_, progress).Fields();
        stage.complete();
      }
      txn.exec(q::kStagedJoinSettingsSql);
      if (params.any_calendar_slots) txn.exec_prepared(q::kRegisterStagedZonesName);
      for (const pqxx::row& row : txn.exec_prepared(q::kInsertStagedJobsName)) {
        StoredJob job = StoredJobFromRow(row);
        const auto it = by_key.find({job.spec.shard, job.spec.id});
        if (insert_first && it != by_key.end()) {
          changes.AddCreated(std::move(job), ActionChange(*it->second));
        } else {
          changes.MarkCreated(std::move(job));
        }
      }
      if (insert_first) read_before_the_rest();
      // Step 2 finds nothing to replace when step 1 created every staged job (a bulk load).
      if (changes.created_count() < params.upserts.size()) txn.exec_prepared(q::kUpdateStagedJobsName);
      // A job's cron_slots follow its row: replaced for every row this batch wrote (a job that
      // was a slot-planned cron job may now be anything else), created for cron jobs.
      txn.exec_prepared(q::kDeleteStagedSlotsName);
      if (params.any_calendar_slots) txn.exec_prepared(q::kInsertStagedSlotsName);
    } else if (insert_first) {
      read_before_the_rest();
    }
    for (const std::string& chunk : params.deletes) DeleteJobsAndTheirRows(txn, chunk, &changes);
    for (const std::string& chunk : params.set_paused) {
      RestartFireLimits(txn, txn.exec_prepared(pg_queries::kSetPausedName, chunk, txn_now_), layout_, time_zones_);
    }
    changes.RecordAfter(txn);
    txn.commit();
    return Status::Ok();
  });
}

}  // namespace belfry
