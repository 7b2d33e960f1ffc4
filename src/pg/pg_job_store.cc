#include "pg/pg_job_store.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <charconv>
#include <map>
#include <set>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/stream_to>
#include <pqxx/transaction>
#include <unordered_set>
#include <utility>

#include "core/calendar_schedule.h"
#include "core/fire_limit.h"
#include "core/manual_fire.h"
#include "core/shard_hash.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "pg/copy_row.h"
#include "pg/json_array_chunks.h"
#include "pg/pg_bulk_op_queries.h"
#include "pg/pg_job_change_queries.h"
#include "pg/pg_job_change_log.h"
#include "pg/pg_queries.h"
#include "pg/pg_job_writes.h"
#include "pg/pg_rows.h"

namespace belfry {
namespace {

std::vector<PreparedStatement> JobStoreStatements() {
  namespace q = pg_queries;
  return {
      {q::kUpsertStageExistsName, q::kUpsertStageExistsSql},
      {q::kDeleteJobsAndTheirRowsName, q::kDeleteJobsAndTheirRowsSql},
      {q::kCoveredBackfillsName, q::kCoveredBackfillsSql},
      {q::kRecordBackfillName, q::kRecordBackfillSql},
      {q::kInsertManualRowsName, q::kInsertManualRowsSql},
      {q::kJobsInTheirShardsName, q::kJobsInTheirShardsSql},
      {q::kSetPausedName, q::kSetPausedSql},
      {q::kReadJobsByKeysName, q::kReadJobsByKeysSql},
      {q::kLockJobsByKeysName, q::kLockJobsByKeysSql},
      {q::kListJobChangesName, q::kListJobChangesSql},
      {q::kJobChangesSinceName, q::kJobChangesSinceSql},
      {q::kLaterChangesOfJobsName, q::kLaterChangesOfJobsSql},
      {q::kLockChangePublisherName, q::kLockChangePublisherSql},
      {q::kUnlockChangePublisherName, q::kUnlockChangePublisherSql},
      {q::kUnpublishedChangesName, q::kUnpublishedChangesSql},
      {q::kMarkChangesPublishedName, q::kMarkChangesPublishedSql},
      {q::kSweepJobChangesName, q::kSweepJobChangesSql},
      {q::kSetFireLimitsName, q::kSetFireLimitsSql},
      {q::kGetJobName, q::kGetJobSql},
      {q::kGetJobInShardName, q::kGetJobInShardSql},
      {q::kGetJobViewName, q::kGetJobViewSql},
      {q::kRecordDeliveryErrorName, q::kRecordDeliveryErrorSql},
      {q::kGetDeliveryErrorName, q::kGetDeliveryErrorSql},
      {q::kGetJobViewInShardName, q::kGetJobViewInShardSql},
      {q::kListJobsName, q::kListJobsSql},
      {q::kListJobsByOwnerName, q::kListJobsByOwnerSql},
      {q::kListJobsByTopicName, q::kListJobsByTopicSql},
      {q::kListJobsByOwnerTopicName, q::kListJobsByOwnerTopicSql},
      {q::kListJobsByLabelsName, q::kListJobsByLabelsSql},
      {q::kCountJobsName, q::kCountJobsSql},
      {q::kSweepOneShotsName, q::kSweepOneShotsSql},
      {q::kTzdataVersionName, q::kTzdataVersionSql},
      {q::kSetTzdataVersionName, q::kSetTzdataVersionSql},
      {q::kIntervalCalendarJobsName, q::kIntervalCalendarJobsSql},
      {q::kReplanJobName, q::kReplanJobSql},
      {q::kRegisterZoneName, q::kRegisterZoneSql},
      {q::kInsertJobSlotsName, q::kInsertJobSlotsSql},
      {q::kLockShardStatesName, q::kLockShardStatesSql},
      {q::kGetShardCountName, q::kGetShardCountSql},
      {q::kReadLayoutName, q::kReadLayoutSql},
      {q::kShareLayoutName, q::kShareLayoutSql},
      {q::kAcceptBulkOpName, q::kAcceptBulkOpSql},
      {q::kBulkOpSourceName, q::kBulkOpSourceSql},
      {q::kClaimBulkOpName, q::kClaimBulkOpSql},
      {q::kBulkPageName, q::kBulkPageSql},
      {q::kBulkCountName, q::kBulkCountSql},
      {q::kRecordBulkStepName, q::kRecordBulkStepSql},
      {q::kUnpublishedBulkOpsName, q::kUnpublishedBulkOpsSql},
      {q::kMarkBulkOpPublishedName, q::kMarkBulkOpPublishedSql},
      {q::kGetBulkOpName, q::kGetBulkOpSql},
      {q::kListBulkOpsName, q::kListBulkOpsSql},
  };
}

// One row of the upsert staging table, as COPY text fields in kUpsertStageColumns order.
using StageRow = CopyRow<std::size(pg_queries::kUpsertStageColumns)>;

// `shard`: the job's stored shard (ActionShard), not spec.shard; `placement_shard`: the
// shard_state row that places a one-shot (FiringShardRow); `cutover_minute`: PendingCutoverMinute.
StageRow UpsertStageRow(const JobAction& a, int32_t shard, int32_t placement_shard,
                        std::optional<int64_t> cutover_minute) {
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
    row.Set(c++, IntArrayLiteral(slots.codes));
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
  row.SetInt(c++, placement_shard);
  row.SetOptionalInt(c++, cutover_minute);
  return row;
}

struct ActionParams {
  std::vector<StageRow> upserts;  // in (shard, id) order
  std::string one_shot_shards;    // smallint[] literal of the one-shot upserts' shards; "" if none
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
        const int32_t placement = FiringShardRow(layout, a->spec.run_minute, shard);
        params.upserts.push_back(UpsertStageRow(*a, shard, placement, PendingCutoverMinute(layout)));
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
  for (int32_t row : one_shot_rows) {
    params.one_shot_shards += params.one_shot_shards.empty() ? "{" : ",";
    params.one_shot_shards += std::to_string(row);
  }
  if (!params.one_shot_shards.empty()) params.one_shot_shards += '}';
  return params;
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
                                                 const ShardLayout& layout) {
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
    chunks.Int("placement_shard", FiringShardRow(layout, r.row->run_minute, r.shard));
    chunks.OptionalInt("cutover_minute", PendingCutoverMinute(layout));
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

std::optional<StoredJob> ReadJobInTxn(pqxx::transaction_base& txn, const std::string& id, const ShardLayout& layout) {
  pqxx::result r = txn.exec_prepared(pg_queries::kGetJobInShardName, id, StoredShard(id, layout));
  if (r.empty()) r = txn.exec_prepared(pg_queries::kGetJobName, id);
  if (r.empty()) return std::nullopt;
  return StoredJobFromRow(r[0]);
}

std::string IntArrayLiteral(const std::vector<int32_t>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += std::to_string(values[i]);
  }
  out.push_back('}');
  return out;
}

int64_t DeleteJobsAndTheirRows(pqxx::transaction_base& txn, const std::string& chunk, JobChangeLog* changes) {
  const pqxx::result deleted = txn.exec_prepared(pg_queries::kDeleteJobsAndTheirRowsName, chunk);
  if (changes != nullptr) {
    for (const pqxx::row& r : deleted) changes->MarkDeleted(r[1].as<int32_t>(), r[0].as<std::string>());
  }
  return static_cast<int64_t>(deleted.size());
}

void RestartFireLimits(pqxx::transaction_base& txn, const pqxx::result& resumed, const ShardLayout& layout,
                       const TimeZoneDatabase& time_zones) {
  if (resumed.empty()) return;
  std::map<std::pair<int32_t, std::string>, std::pair<EpochMs, EpochMs>> pause_and_resume;
  JsonArrayChunks keys;
  for (const pqxx::row& r : resumed) {
    const auto id = r[0].as<std::string>();
    const auto shard = r[1].as<int32_t>();
    pause_and_resume[{shard, id}] = {r[2].as<int64_t>(), r[3].as<int64_t>()};
    keys.BeginObject();
    keys.String("id", id);
    keys.Int("shard", shard);
    keys.EndObject();
  }
  JsonArrayChunks limits;
  for (const std::string& chunk : keys.Finish()) {
    for (const pqxx::row& row : txn.exec_prepared(pg_queries::kReadJobsByKeysName, chunk)) {
      JobSpec spec = StoredJobFromRow(row).spec;
      const auto it = pause_and_resume.find({spec.shard, spec.id});
      if (!spec.max_fires || it == pause_and_resume.end()) continue;
      // Counted by the job's firing shard and tick of the resume's minute (docs/resharding.md: a
      // count whose window began under an older layout may be one off at that boundary).
      const int32_t stored_shard = spec.shard;
      const FiringBasis basis = FiringBasisOf(layout, EpochMinuteOf(it->second.second), stored_shard);
      spec.shard = basis.shard;
      ResumeFireLimit(time_zones, &spec, it->second.first, it->second.second, basis.tick_ms);
      spec.shard = stored_shard;  // the row's key
      limits.BeginObject();
      limits.String("id", spec.id);
      limits.Int("shard", spec.shard);
      limits.Int("fires_before", spec.fires_before);
      limits.Int("fires_from", spec.fires_from_ms);
      limits.OptionalInt("start", spec.start_at);
      limits.OptionalInt("end", spec.end_at);
      limits.EndObject();
    }
  }
  for (const std::string& chunk : limits.Finish()) txn.exec_prepared(pg_queries::kSetFireLimitsName, chunk);
}

std::vector<size_t> ApplyTriggersSetBased(pqxx::transaction_base& txn, const std::vector<ManualFire>& fires,
                                          const ShardLayout& layout, std::vector<ManualFireResult>* results) {
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
  std::unordered_set<std::string> inserted = rows.empty() ? std::unordered_set<std::string>() : InsertManualRows(txn, rows, layout);
  for (size_t k = 0; k < planned.size(); ++k) {
    // Two triggers of one job in the same millisecond are one row: the first of them stored it.
    (*results)[stored[k]].slots = inserted.erase(planned[k].row_id) > 0 ? 1 : 0;
  }
  std::sort(rest.begin(), rest.end());
  return rest;
}

PgJobStore::PgJobStore(std::string database_url, StandbyOptions standby, const TimeZoneDatabase& time_zones)
    : time_zones_(time_zones),
      session_(database_url, JobStoreStatements()),
      due_stream_(std::move(database_url), time_zones),
      standby_(standby.url.empty() ? nullptr
                                   : std::make_unique<PgStandbyReader>(std::move(standby), time_zones)) {}

PgJobStore::~PgJobStore() = default;

Status PgJobStore::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  if (standby_ != nullptr) return standby_->ForEachDueJob(q, fn, due_stream_);
  return due_stream_.ForEachDueJob(q, fn);
}

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
    JobChangeLog changes;
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
      if (!txn.exec_prepared(q::kUpsertStageExistsName)[0][0].as<bool>()) txn.exec(q::kCreateUpsertStageSql);
      {
        pqxx::stream_to stage(
            txn, q::kUpsertStageTable,
            std::vector<std::string>(std::begin(q::kUpsertStageColumns), std::end(q::kUpsertStageColumns)));
        for (const StageRow& row : params.upserts) stage << row.Fields();
        stage.complete();
      }
      txn.exec(q::kStagedJoinSettingsSql);
      // One-shots are placed by their shard's progress (BELFRY_RUN_MINUTE): hold those shards'
      // rows from before that read until the commit, so that no firing claims a minute between.
      if (!params.one_shot_shards.empty()) {
        txn.exec_prepared(q::kLockShardStatesName, params.one_shot_shards);
      }
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
      RestartFireLimits(txn, txn.exec_prepared(pg_queries::kSetPausedName, chunk), layout_, time_zones_);
    }
    changes.RecordAfter(txn);
    txn.commit();
    return Status::Ok();
  });
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
    txn.exec_prepared(pg_queries::kLockShardStatesName, IntArrayLiteral(shards));
    for (size_t i : ApplyTriggersSetBased(txn, fires, layout_, &results)) {
      const ManualFire& f = fires[i];
      const std::optional<StoredJob> job = ReadJobInTxn(txn, f.id, layout_);
      ManualPlan plan = PlanManualFire(txn, f, job, layout_, time_zones_);
      results[i] = plan.result;
      if (!plan.result.status.ok() || f.backfill.dry_run) continue;
      for (int32_t row : PlacingShardRows(layout_, job->spec.shard)) {
        if (!std::binary_search(shards.begin(), shards.end(), row)) {  // stored under another shard
          txn.exec_prepared(pg_queries::kLockShardStatesName, IntArrayLiteral({row}));
        }
      }
      std::vector<RowToStore> rows;
      rows.reserve(plan.rows.size());
      for (const ManualRow& row : plan.rows) {
        rows.push_back(RowToStore{&row, job->spec.id, job->spec.shard, f.source, row.run_minute - plan.rows.front().run_minute});
      }
      const int64_t inserted = rows.empty() ? 0 : static_cast<int64_t>(InsertManualRows(txn, rows, layout_).size());
      results[i].slots = inserted;
      if (f.kind == ManualFire::Kind::kBackfill) {
        txn.exec_prepared(pg_queries::kRecordBackfillName, f.id, f.backfill.from_ms, f.backfill.to_ms, inserted,
                          f.backfill.rate_per_minute, f.source.partition, f.source.offset);
      }
    }
    JobChangeLog changes;  // the fires that stored rows (a replay stores none)
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

StatusOr<std::optional<StoredJob>> PgJobStore::GetJob(const std::string& id) {
  std::optional<StoredJob> job;
  Status st = session_.Run("get job", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    if (Status st = LoadLayout(txn, false); !st.ok()) return st;
    job = ReadJobInTxn(txn, id, layout_);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return job;
}

Status PgJobStore::RecordDeliveryError(const DeliveryErrorRecord& e) {
  return session_.Run("record delivery error", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    txn.exec_prepared(pg_queries::kRecordDeliveryErrorName, e.job_id, e.topic, e.slot_ms, e.error, e.at_ms);
    return Status::Ok();
  });
}

StatusOr<std::optional<JobAndStats>> PgJobStore::GetJobAndStats(const std::string& id) {
  std::optional<JobAndStats> view;
  Status st = session_.Run("get job view", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    if (Status st = LoadLayout(txn, false); !st.ok()) return st;
    const int32_t shard = StoredShard(id, layout_);
    pqxx::result r;
    if (shard < pg_queries::kJobPartitions) {
      const std::string name = pg_queries::GetJobViewInPartitionName(shard);
      conn.prepare(name, pg_queries::GetJobViewInPartitionSql(shard));  // idempotent; sent on first use
      r = txn.exec_prepared(name, id);
    } else {
      r = txn.exec_prepared(pg_queries::kGetJobViewInShardName, id, shard);
    }
    if (r.empty()) r = txn.exec_prepared(pg_queries::kGetJobViewName, id);
    if (r.empty()) return Status::Ok();
    view.emplace();
    view->job = StoredJobFromRow(r[0]);
    view->stats_read = true;
    if (!r[0][pg_queries::kJobViewStatsColumn].is_null()) {
      view->stats = JobStatsFromRow(r[0], pg_queries::kJobViewStatsColumn);
    }
    const pqxx::result e = txn.exec_prepared(pg_queries::kGetDeliveryErrorName, id);
    if (!e.empty()) {
      DeliveryErrorRecord d;
      d.job_id = id;
      d.topic = e[0][0].as<std::string>();
      d.slot_ms = e[0][1].as<int64_t>();
      d.error = e[0][2].as<std::string>();
      d.at_ms = e[0][3].as<int64_t>();
      view->last_delivery_error = std::move(d);
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return view;
}

Status PgJobStore::LoadLayout(pqxx::transaction_base& txn, bool lock) {
  const pqxx::result r = txn.exec_prepared(lock ? pg_queries::kShareLayoutName : pg_queries::kReadLayoutName);
  if (r.empty() || r[0][0].is_null()) {
    return Status::FailedPrecondition("the database records no shard layout: run `belfry migrate`");
  }
  StatusOr<ShardLayout> layout = ParseShardLayout(r[0][0].as<std::string>());
  if (!layout.ok()) return layout.status();
  layout_ = *layout;
  return Status::Ok();
}

StatusOr<JobPage> PgJobStore::ListJobs(const JobListFilter& filter) {
  const int32_t page_size = std::clamp(filter.limit, 1, kMaxJobPage);
  const int32_t limit = page_size + 1;  // the extra row says whether another page exists
  std::vector<StoredJob> jobs;
  Status st = session_.Run("list jobs", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    pqxx::nontransaction txn(conn);
    pqxx::result r;
    const bool by_owner = !filter.owner.empty();
    const bool by_topic = !filter.topic.empty();
    if (!filter.labels.empty() && filter.labels != "{}") {
      r = txn.exec_prepared(q::kListJobsByLabelsName, filter.after_id, limit, filter.owner, filter.topic,
                            filter.labels);
    } else if (by_owner && by_topic) {
      r = txn.exec_prepared(q::kListJobsByOwnerTopicName, filter.after_id, limit, filter.owner, filter.topic);
    } else if (by_owner) {
      r = txn.exec_prepared(q::kListJobsByOwnerName, filter.after_id, limit, filter.owner);
    } else if (by_topic) {
      r = txn.exec_prepared(q::kListJobsByTopicName, filter.after_id, limit, filter.topic);
    } else {
      r = txn.exec_prepared(q::kListJobsName, filter.after_id, limit);
    }
    jobs.reserve(r.size());
    for (const pqxx::row& row : r) jobs.push_back(StoredJobFromRow(row));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return JobPageOf(std::move(jobs), page_size);
}

StatusOr<std::string> PgJobStore::ExplainDueQuery(const DueQuery& q) { return due_stream_.ExplainDueQuery(q); }

void PgJobStore::SetUnknownZoneHandler(const PgDueQueryStream::UnknownZoneHandler& handler) {
  due_stream_.SetUnknownZoneHandler(handler);
  if (standby_ != nullptr) standby_->SetUnknownZoneHandler(handler);
}

StatusOr<int64_t> PgJobStore::SweepOneShots(int64_t before_minute, int32_t max_rows) {
  int64_t deleted = 0;
  Status st = session_.Run("sweep one-shots", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    deleted = static_cast<int64_t>(txn.exec_prepared(pg_queries::kSweepOneShotsName, before_minute, max_rows).size());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return deleted;
}

StatusOr<PgJobStore::ReplanReport> PgJobStore::ReplanCalendarJobs(const std::string& tzdata_version, EpochMs now,
                                                                  const std::vector<int32_t>& intervals) {
  ReplanReport report;
  Status st = session_.Run("re-plan calendar jobs", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    report = ReplanReport();
    pqxx::work txn(conn, "replan_calendar_jobs");
    const pqxx::result recorded = txn.exec_prepared(q::kTzdataVersionName);
    if (!recorded.empty() && recorded[0][0].as<std::string>() == tzdata_version) return Status::Ok();
    report.version_changed = true;
    const pqxx::result rows = txn.exec_prepared(q::kIntervalCalendarJobsName);
    for (const pqxx::row& row : rows) {
      ++report.checked;
      JobSpec spec;
      spec.id = row[0].as<std::string>();
      spec.shard = row[1].as<int32_t>();
      const std::string cron = row[2].as<std::string>();
      const std::string zone = row[3].as<std::string>();
      // Planned with neither start nor end: those only decide whether it can still fire, and a
      // job already past its end keeps its plan.
      if (Status planned = PlanCalendarJob(time_zones_, cron, zone, now, intervals, &spec); !planned.ok()) {
        if (planned.reason() == "invalid_time_zone") ++report.unknown_zone;
        continue;
      }
      if (spec.interval_minutes == row[4].as<int32_t>() && spec.offset_minutes == row[5].as<int32_t>()) continue;
      // A command that changed the job after the read above wins: its update matched no row, and
      // the old expression's slots must not be added beside the new one's.
      const pqxx::result updated = txn.exec_prepared(q::kReplanJobName, spec.shard, spec.id, spec.interval_minutes,
                                                     spec.offset_minutes, cron, zone);
      if (updated.affected_rows() == 0) continue;
      ++report.changed;
      if (spec.calendar_slots()) {
        const CalendarSlots& slots = spec.calendar->slots;
        txn.exec_prepared(q::kRegisterZoneName, zone);
        txn.exec_prepared(q::kInsertJobSlotsName, spec.shard, spec.id, IntArrayLiteral(slots.codes), slots.hour_mask,
                          slots.dom_mask, slots.month_mask, slots.dow_mask, slots.day_or, zone);
      }
    }
    txn.exec_prepared(q::kSetTzdataVersionName, tzdata_version);
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return report;
}

namespace {

std::optional<EpochMs> OptionalMs(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<int64_t>();
}

Status TooManyGroups(const LoadGroupQuery& query) {
  return Status::Invalid("too_many_groups",
                         "the breakdown by " + query.by + " has more than " + std::to_string(query.max_groups) +
                             " groups of jobs that fire alike; `belfry load --by " + query.by +
                             "` reads without this limit (docs/load-projection.md)");
}

}  // namespace

StatusOr<LoadGroups> PgJobStore::ReadLoadGroups(const LoadGroupQuery& query) {
  size_t variant = 0;
  if (query.by == "owner") {
    variant = 1;
  } else if (query.by == "topic") {
    variant = 2;
  } else if (!query.by.empty()) {
    return Status::Invalid("invalid_by", "load can be broken down by owner or topic, not \"" + query.by + "\"");
  }
  const int64_t first_ms = query.first_minute * 60'000;
  const int64_t end_ms = (query.last_minute + 1) * 60'000;
  LoadGroups out;
  Status st = session_.Run("read load groups", [&](pqxx::connection& conn) {
    out = LoadGroups{};
    pqxx::work txn(conn, "load_groups");
    // One snapshot for the three reads: a zone a calendar job uses is in the zones read.
    txn.exec("SET TRANSACTION READ ONLY ISOLATION LEVEL REPEATABLE READ");
    // A full read of the jobs takes seconds at millions of jobs (2.7 s at 6.4M), beyond the admin
    // sessions' statement_timeout (2 s by default): this transaction gets its own bound.
    txn.exec(pg_queries::kLoadStatementTimeoutSql);
    for (const pqxx::row& row : txn.exec(pg_queries::kListCronZonesSql)) {
      out.zones.emplace_back(row[0].as<int32_t>(), row[1].as<std::string>());
    }
    const int64_t limit = query.max_groups > 0 ? query.max_groups + 1 : INT64_MAX;
    const pqxx::result job_rows = txn.exec_params(pg_queries::kLoadJobGroupsSql[variant], first_ms, end_ms,
                                                  query.first_minute, query.last_minute, limit);
    if (query.max_groups > 0 && static_cast<int64_t>(job_rows.size()) > query.max_groups) return TooManyGroups(query);
    for (const pqxx::row& row : job_rows) {
      LoadGroup& g = out.groups.emplace_back();
      g.shard = row[0].as<int32_t>();
      if (row[3].is_null()) {
        g.kind = LoadGroup::Kind::kInterval;
        g.interval_minutes = row[1].as<int32_t>();
        g.offset_minutes = row[2].as<int32_t>();
      } else {
        g.kind = LoadGroup::Kind::kOneShot;
        g.run_minute = row[3].as<int64_t>();
      }
      g.start_at = OptionalMs(row[4]);
      g.end_at = OptionalMs(row[5]);
      g.label = row[6].as<std::string>();
      g.jobs = row[7].as<int64_t>();
    }
    // max_groups bounds the request's groups, both statements together (issue 33 §5).
    const int64_t job_groups = static_cast<int64_t>(job_rows.size());
    const int64_t calendar_limit = query.max_groups > 0 ? query.max_groups - job_groups + 1 : INT64_MAX;
    const pqxx::result calendar_rows =
        txn.exec_params(pg_queries::kLoadCalendarGroupsSql[variant], first_ms, end_ms, calendar_limit);
    if (query.max_groups > 0 && job_groups + static_cast<int64_t>(calendar_rows.size()) > query.max_groups) {
      return TooManyGroups(query);
    }
    for (const pqxx::row& row : calendar_rows) {
      LoadGroup& g = out.groups.emplace_back();
      g.kind = LoadGroup::Kind::kCalendar;
      g.shard = row[0].as<int32_t>();
      LoadSlotRow masks;
      masks.hour_mask = row[2].as<int32_t>();
      masks.dom_mask = row[3].as<int32_t>();
      masks.month_mask = row[4].as<int32_t>();
      masks.dow_mask = row[5].as<int32_t>();
      masks.day_or = row[6].as<bool>();
      const std::string keys = row[1].as<std::string>();
      for (size_t pos = 0; pos < keys.size();) {
        size_t end = keys.find(',', pos);
        if (end == std::string::npos) end = keys.size();
        LoadSlotRow r = masks;
        std::from_chars(keys.data() + pos, keys.data() + end, r.key);
        g.slots.push_back(r);
        pos = end + 1;
      }
      g.start_at = OptionalMs(row[7]);
      g.end_at = OptionalMs(row[8]);
      g.label = row[9].as<std::string>();
      g.jobs = row[10].as<int64_t>();
    }
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::vector<OffsetLoad>> PgJobStore::ReadOffsetLoads() {
  std::vector<OffsetLoad> out;
  Status st = session_.Run("read offset loads", [&](pqxx::connection& conn) {
    out.clear();
    pqxx::work txn(conn, "offset_loads");
    txn.exec(pg_queries::kLoadStatementTimeoutSql);  // a full read, as ReadLoadGroups
    for (const pqxx::row& row : txn.exec(pg_queries::kOffsetLoadsSql)) {
      out.push_back(OffsetLoad{row[0].as<int32_t>(), row[1].as<int32_t>(), row[2].as<int64_t>(), row[3].as<int64_t>()});
    }
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::vector<std::string>> PgJobStore::MovableJobIds(int32_t interval_minutes, int32_t offset_minutes,
                                                             int32_t limit) {
  std::vector<std::string> out;
  Status st = session_.Run("movable job ids", [&](pqxx::connection& conn) {
    out.clear();
    pqxx::nontransaction txn(conn);
    for (const pqxx::row& row : txn.exec_params(pg_queries::kMovableJobIdsSql, interval_minutes, offset_minutes, limit)) {
      out.push_back(row[0].as<std::string>());
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<int64_t> PgJobStore::CountJobs() {
  int64_t count = 0;
  Status st = session_.Run("count jobs", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    count = txn.exec_prepared(pg_queries::kCountJobsName)[0][0].as<int64_t>();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return count;
}

}  // namespace belfry
