// The SQL of the audit trail (docs/audit-trail.md, migration 0015): recording job changes in
// the transactions that make them, publishing them, reading a job's history, the retention sweep.
#pragma once

#include "pg/pg_job_sql.h"  // BELFRY_TS_TO_MS

namespace belfry::pg_queries {

// The jobs' snapshots are read by pg_job_sql.h's kReadJobsByKeysSql and kLockJobsByKeysSql.

// JobChangeLog::RecordAfter COPYs its changes into job_changes (change_id follows the COPY's order).
inline constexpr const char kJobChangesTable[] = "job_changes";
inline constexpr const char* kJobChangesCopyColumns[] = {"job_id", "op", "bulk_id", "actor", "reason",
                                                         "src_partition", "src_offset", "command_ts",
                                                         "before", "after", "detail"};

// The columns JobChangeFromRow reads, in order.
#define BELFRY_JOB_CHANGE_COLUMNS                                                                  \
  "change_id, job_id, op, bulk_id, actor, reason, src_partition, src_offset, command_ts,"          \
  " " BELFRY_TS_TO_MS("changed_at") ", before, after, detail"

// A job's changes, newest first: $1 job id, $2 changes before this change_id, $3 limit.
inline constexpr const char kListJobChangesName[] = "belfry_list_job_changes";
inline constexpr const char kListJobChangesSql[] =
    "SELECT " BELFRY_JOB_CHANGE_COLUMNS " FROM job_changes WHERE job_id = $1 AND change_id < $2::bigint "
    "ORDER BY change_id DESC LIMIT $3::int";

// The changes of job $1 from change $2 on, newest first: the ones a page's expansion walks back
// through from the job as it is (ExpandJobChanges).
inline constexpr const char kJobChangesSinceName[] = "belfry_job_changes_since";
inline constexpr const char kJobChangesSinceSql[] =
    "SELECT " BELFRY_JOB_CHANGE_COLUMNS " FROM job_changes WHERE job_id = $1 AND change_id >= $2::bigint "
    "ORDER BY change_id DESC";

// The changes after change $2 of the jobs in $1 (a JSON array of ids), by job, newest first:
// what the publisher's expansion walks back through, beyond its batch.
inline constexpr const char kLaterChangesOfJobsName[] = "belfry_later_changes_of_jobs";
inline constexpr const char kLaterChangesOfJobsSql[] =
    "SELECT " BELFRY_JOB_CHANGE_COLUMNS " FROM job_changes"
    " WHERE job_id IN (SELECT value FROM json_array_elements_text($1::json)) AND change_id > $2::bigint "
    "ORDER BY job_id, change_id DESC";

// One publisher at a time, cluster-wide: held to the end of its transaction. ASCII "belfrych".
inline constexpr long long kChangePublisherLockKey = 0x62656c6672796368LL;
inline constexpr const char kLockChangePublisherName[] = "belfry_lock_change_publisher";
// A session-level lock, held across the round's statements and the wait for the broker with no
// transaction open (issue 33 §5: a transaction held open through that wait kept its snapshot and
// locks for up to the delivery timeout). A lost connection releases it.
inline constexpr const char kLockChangePublisherSql[] = "SELECT pg_try_advisory_lock($1::bigint)";
inline constexpr const char kUnlockChangePublisherName[] = "belfry_unlock_change_publisher";
inline constexpr const char kUnlockChangePublisherSql[] = "SELECT pg_advisory_unlock($1::bigint)";

// The oldest unpublished changes, at most $1: those whose id is in job_change_pending (migration
// 0018: added by a statement trigger on job_changes, so that a job_changes row is written once).
// An array of ids, not a join: a join of the two was planned as a scan of job_changes (71 ms a
// round at 200k changes); the array probes the primary key once per id. A pending id whose row is
// gone (deleted by hand) is passed over, not waited for.
inline constexpr const char kUnpublishedChangesName[] = "belfry_unpublished_changes";
inline constexpr const char kUnpublishedChangesSql[] =
    "SELECT " BELFRY_JOB_CHANGE_COLUMNS " FROM job_changes WHERE change_id = ANY(ARRAY("
    "SELECT p.change_id FROM job_change_pending AS p"
    " WHERE EXISTS (SELECT 1 FROM job_changes AS c WHERE c.change_id = p.change_id)"
    " ORDER BY p.change_id LIMIT $1::int)) "
    "ORDER BY change_id";

// $1 = bigint[] of change ids, published: no longer pending.
inline constexpr const char kMarkChangesPublishedName[] = "belfry_mark_changes_published";
inline constexpr const char kMarkChangesPublishedSql[] =
    "DELETE FROM job_change_pending WHERE change_id = ANY($1::bigint[])";

// Of the $2 oldest changes, deletes the published ones from before $1 (ms). Walks the primary
// key from its start, so it needs no index on changed_at: change ids grow with time.
inline constexpr const char kSweepJobChangesName[] = "belfry_sweep_job_changes";
inline constexpr const char kSweepJobChangesSql[] =
    "DELETE FROM job_changes AS c WHERE change_id = ANY(ARRAY(SELECT change_id FROM job_changes ORDER BY change_id"
    " LIMIT $2::int)) AND changed_at < to_timestamp($1::bigint / 1000.0)"
    " AND NOT EXISTS (SELECT 1 FROM job_change_pending AS p WHERE p.change_id = c.change_id)";

#undef BELFRY_JOB_CHANGE_COLUMNS

}  // namespace belfry::pg_queries
