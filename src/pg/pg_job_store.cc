// PgJobStore: its connections, its prepared statements, the layout record it reads, and the
// trigger path's two calls (the tick query, a refused trigger's record). Each role's methods
// are in a file of their own (pg_job_store.h says which).
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
#include "pg/pg_command_queries.h"
#include "pg/pg_job_change_log.h"
#include "pg/pg_job_change_queries.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_job_writes.h"
#include "pg/pg_maintenance_queries.h"
#include "pg/pg_manual_fire_queries.h"
#include "pg/pg_read_queries.h"
#include "pg/pg_rows.h"
#include "pg/pg_schema_queries.h"

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

}  // namespace

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

Status PgJobStore::RecordDeliveryError(const DeliveryErrorRecord& e) {
  return session_.Run("record delivery error", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    txn.exec_prepared(pg_queries::kRecordDeliveryErrorName, e.job_id, e.topic, e.slot_ms, e.error, e.at_ms);
    return Status::Ok();
  });
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

StatusOr<std::string> PgJobStore::ExplainDueQuery(const DueQuery& q) { return due_stream_.ExplainDueQuery(q); }

void PgJobStore::SetUnknownZoneHandler(const PgDueQueryStream::UnknownZoneHandler& handler) {
  due_stream_.SetUnknownZoneHandler(handler);
  if (standby_ != nullptr) standby_->SetUnknownZoneHandler(handler);
}

}  // namespace belfry
