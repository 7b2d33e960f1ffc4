#include "pg/pg_job_store_options.h"

#include <utility>

#include "pg/pg_bulk_op_queries.h"
#include "pg/pg_command_queries.h"
#include "pg/pg_job_change_queries.h"
#include "pg/pg_job_sql.h"
#include "pg/pg_maintenance_queries.h"
#include "pg/pg_manual_fire_queries.h"
#include "pg/pg_read_queries.h"
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
      {q::kReadJobsInShardName, q::kReadJobsInShardSql},
      {q::kLockJobsInShardName, q::kLockJobsInShardSql},
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
      {q::kListJobsByPrefixName, q::kListJobsByPrefixSql},
      {q::kListJobsByPrefixFilterName, q::kListJobsByPrefixFilterSql},
      {q::kCountJobsName, q::kCountJobsSql},
      {q::kSweepOneShotsName, q::kSweepOneShotsSql},
      {q::kTzdataVersionName, q::kTzdataVersionSql},
      {q::kSetTzdataVersionName, q::kSetTzdataVersionSql},
      {q::kIntervalCalendarJobsName, q::kIntervalCalendarJobsSql},
      {q::kReplanJobName, q::kReplanJobSql},
      {q::kRegisterZoneName, q::kRegisterZoneSql},
      {q::kInsertJobSlotsName, q::kInsertJobSlotsSql},
      {q::kLockPlacingShardStatesName, q::kLockPlacingShardStatesSql},
      {q::kLockPlacingShardStateName, q::kLockPlacingShardStateSql},
      {q::kGetShardCountName, q::kGetShardCountSql},
      {q::kReadLayoutName, q::kReadLayoutSql},
      {q::kLockLayoutSharedName, q::kLockLayoutSharedSql},
      {q::kReadLayoutAndNowName, q::kReadLayoutAndNowSql},
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

PgJobStoreOptions MakePgJobStoreOptions(const std::string& database_url, StandbyOptions standby,
                                        const TimeZoneDatabase& time_zones) {
  return PgJobStoreOptions{PgConninfo(database_url),
                           std::make_shared<const std::vector<PreparedStatement>>(JobStoreStatements()),
                           std::move(standby), &time_zones};
}

}  // namespace belfry
