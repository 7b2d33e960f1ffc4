// PgJobStore: every role of JobStore (include/belfry/job_store.h) over PostgreSQL (schema:
// migrations/, reasoning: docs/storage.md). One file per role:
//   pg_job_store.cc               connections, the layout record, and the TriggerPathStore (the
//                                 tick query, a refused trigger's record)
//   pg_job_store_commands.cc      CommandStore::ApplyActions
//   pg_job_store_manual_fires.cc  CommandStore::ApplyManualFires, JobReader::CountBackfill
//   pg_job_store_bulk.cc          CommandStore::AcceptBulkOps, BulkOpStore, the bulk reads
//   pg_job_store_changes.cc       JobChangeStore, JobReader::ListJobChanges
//   pg_job_store_reads.cc         JobReader: a job, a page of jobs
//   pg_job_store_load.cc          LoadReader
//   pg_job_store_maintenance.cc   the one-shot sweep and the tzdata re-plan (PgJobStore only)
// Their SQL is in the pg_*_queries.h of the same role. What stores share (the connection string,
// the list of statements each connection prepares) is PgJobStoreOptions (pg_job_store_options.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

#include "belfry/job_store.h"
#include "belfry/shard_layout.h"
#include "pg/pg_due_query_stream.h"
#include "pg/pg_job_store_options.h"
#include "pg/pg_session.h"
#include "pg/pg_standby_reader.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {

// Thread-compatible, not thread-safe: use one instance per thread. It holds up to two
// connections, each opened on first use: a libpqxx one for writes and admin reads, and a raw
// libpq one for the streamed tick query. A scheduler worker therefore holds only the second and
// the command consumer only the first. A broken connection makes the call return Retryable and
// is reopened by the next call.
class PgJobStore final : public JobStore {
 public:
  // Connects to options.database with options.statements. `options.standby.url`, when not
  // empty, is a hot standby of that database that serves the tick query once it has replayed past
  // the query's read fence (PgStandbyReader, docs/hot-standby.md). Calendar jobs' zones come from
  // options.time_zones, which must outlive the store.
  explicit PgJobStore(const PgJobStoreOptions& options);
  // With options of its own: MakePgJobStoreOptions(database_url, standby, time_zones).
  explicit PgJobStore(const std::string& database_url, StandbyOptions standby = {},
                      const TimeZoneDatabase& time_zones = SystemTimeZones());
  PgJobStore(const PgJobStore&) = delete;
  PgJobStore& operator=(const PgJobStore&) = delete;
  ~PgJobStore() override;

  // One statement per call, streamed in single-row mode (see PgDueQueryStream).
  Status ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) override;

  // One transaction; one set-based statement per action kind (two for upserts: insert the new
  // ids, then update the existing rows), whatever the number of actions.
  // REQUIRES: at most one action per id (the batch reducer guarantees it), and an upsert's
  // spec.shard is ShardForId(id, shard_count) (the command parser sets it so): deletes and
  // pause/resume look the job up in that shard's partition only.
  Status ApplyActions(const std::vector<JobAction>& actions) override;

  // One transaction. Triggers are set-based: one statement finds their jobs, one stores all their
  // rows. Each backfill reads its job and its earlier ranges, then stores its rows in one
  // statement (pg_manual_fire_queries.h).
  StatusOr<std::vector<ManualFireResult>> ApplyManualFires(const std::vector<ManualFire>& fires) override;
  StatusOr<ManualFireResult> CountBackfill(const ManualFire& fire) override;

  // StoredJob.spec.offset_explicit is always false and source.timestamp_ms 0: neither is stored.
  StatusOr<std::optional<JobAndStats>> GetJobAndStats(const std::string& id) override;
  Status RecordDeliveryError(const DeliveryErrorRecord& e) override;
  StatusOr<std::optional<StoredJob>> GetJob(const std::string& id) override;
  // Ordered by id; filter.limit is clamped to 1..1000.
  StatusOr<JobPage> ListJobs(const JobListFilter& filter) override;

  // PgDueQueryStream::ExplainDueQuery on the primary: the plans of exactly the statements and
  // parameters ForEachDueJob runs for `q` (calendar branch and stored shards included).
  StatusOr<std::string> ExplainDueQuery(const DueQuery& q);

  // Given to the tick query's streams (the primary's and the standby's): see
  // PgDueQueryStream::SetUnknownZoneHandler.
  void SetUnknownZoneHandler(const PgDueQueryStream::UnknownZoneHandler& handler);

  // Three reads in one READ ONLY REPEATABLE READ transaction: the zones, the interval and
  // one-shot groups, the calendar groups (pg_load_queries.h). Invalid when
  // query.by is not "", "owner" or "topic".
  StatusOr<LoadGroups> ReadLoadGroups(const LoadGroupQuery& query) override;

  StatusOr<std::vector<OffsetLoad>> ReadOffsetLoads() override;
  StatusOr<std::vector<std::string>> MovableJobIds(int32_t interval_minutes, int32_t offset_minutes,
                                                   int32_t limit) override;

  StatusOr<int64_t> CountJobs();

  // Bulk operations (docs/bulk-operations.md; pg_job_store_bulk.cc). A step holds its operation's
  // row (FOR UPDATE SKIP LOCKED), so nodes step different operations, never the same one; it
  // visits at most kBulkShardsPerStep shards.
  static constexpr int32_t kBulkShardsPerStep = 8;
  StatusOr<std::vector<Status>> AcceptBulkOps(const std::vector<BulkOp>& ops) override;
  StatusOr<std::optional<BulkOpState>> RunBulkStep(int32_t max_jobs, EpochMs now) override;
  StatusOr<std::vector<BulkOpState>> UnpublishedBulkOps(int32_t limit) override;
  Status MarkBulkOpPublished(const std::string& id, EpochMs now) override;
  StatusOr<std::optional<BulkOpState>> GetBulkOp(const std::string& id) override;
  StatusOr<std::vector<BulkOpState>> ListBulkOps(int32_t limit) override;

  // The audit trail (docs/audit-trail.md; pg_job_store_changes.cc).
  StatusOr<std::vector<JobChange>> ListJobChanges(const std::string& job_id, int64_t before_change_id,
                                                  int32_t limit) override;
  // One transaction, holding an advisory lock (kChangePublisherLockKey) while `publish` runs: a
  // node that dies mid-publish leaves its changes unmarked for the next publisher (at least once).
  StatusOr<int64_t> PublishChanges(int32_t limit,
                                   const std::function<Status(const std::vector<JobChange>&)>& publish) override;
  StatusOr<int64_t> SweepJobChanges(EpochMs before_ms, int32_t max_rows) override;

  // The one-shot retention sweep: deletes up to max_rows one-shots whose run_minute is before
  // before_minute (they fired, or were missed, long ago). Returns how many it deleted. Not on the
  // trigger path: serve runs it in the background (see docs/executions.md).
  StatusOr<int64_t> SweepOneShots(int64_t before_minute, int32_t max_rows);

  // After the tz database changed (docs/calendar-schedules.md, "When tzdata changes"): when
  // `tzdata_version` differs from the one recorded in belfry_meta, re-plans every calendar job
  // stored as a fixed UTC interval (its zone may have gained an offset change, or a new offset)
  // with `now` and `intervals`, as a command would plan it, then records the version. Returns
  // how many jobs changed plan; 0 when the version is unchanged.
  struct ReplanReport {
    bool version_changed = false;
    int64_t checked = 0;
    int64_t changed = 0;
    int64_t unknown_zone = 0;  // zones this tz database no longer has: left as they were
  };
  StatusOr<ReplanReport> ReplanCalendarJobs(const std::string& tzdata_version, EpochMs now,
                                            const std::vector<int32_t>& intervals);

 private:
  // The layout record (belfry_meta; docs/resharding.md), read in every transaction that needs a
  // stored shard, under the layout lock taken shared when `lock` (a write: a reshard's move of a
  // shard waits for it, and it for the move; kLockLayoutSharedSql): jobs is partitioned by shard, and every write and GetJob names the job's
  // stored shard, StoredShard(id, layout), so that it reads one partition. FailedPrecondition
  // when the database was never migrated.
  Status LoadLayout(pqxx::transaction_base& txn, bool lock);

  const TimeZoneDatabase& time_zones_;
  PgSession session_;
  PgDueQueryStream due_stream_;
  std::unique_ptr<PgStandbyReader> standby_;  // null without a standby
  std::unique_ptr<PgWorkerTickRouter> workers_;  // null with a standby, or when not asked for
  ShardLayout layout_;  // as of the last LoadLayout
  // The write transaction's now() (timestamptz text), read by the last LoadLayout(txn, true) and
  // passed to the statements that would call now() inside a CASE, which Citus refuses in a
  // modification (docs/scale-out.md). "" after a read-only LoadLayout.
  std::string txn_now_;
};

}  // namespace belfry
