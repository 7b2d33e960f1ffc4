// The admin API's and the CLI's reads of jobs (src/pg/pg_job_store_reads.cc), and a refused
// trigger's record (the trigger path's one write, read back in the job view).
#pragma once

#include <algorithm>
#include <string>

#include "pg/pg_job_sql.h"

namespace belfry::pg_queries {

// A job's last undeliverable trigger (migration 0017), written only when the broker refuses one
// for good. $1 job id, $2 topic, $3 slot ms, $4 error text, $5 at ms.
inline constexpr const char kRecordDeliveryErrorName[] = "belfry_record_delivery_error";
inline constexpr const char kRecordDeliveryErrorSql[] =
    "INSERT INTO trigger_delivery_errors (job_id, topic, slot_ms, error, at_ms) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT (job_id) DO UPDATE SET topic = EXCLUDED.topic, slot_ms = EXCLUDED.slot_ms, "
    "error = EXCLUDED.error, at_ms = EXCLUDED.at_ms";
// The job view's lastDeliveryError. $1 job id. Columns: topic, slot_ms, error, at_ms.
inline constexpr const char kGetDeliveryErrorName[] = "belfry_get_delivery_error";
inline constexpr const char kGetDeliveryErrorSql[] =
    "SELECT topic, slot_ms, error, at_ms FROM trigger_delivery_errors WHERE job_id = $1";

// The admin API's job view: the job's columns (BELFRY_JOB_COLUMNS, 36 of them) and then its
// job_stats row (BELFRY_STATS_COLUMNS, all NULL before the first report), in one statement
// instead of two. Same parameters as kGetJobInShard / kGetJob.
#define BELFRY_JOB_VIEW_STATS " AS j LEFT JOIN LATERAL (SELECT " BELFRY_STATS_COLUMNS " FROM job_stats WHERE job_id = $1) AS s ON true"
inline constexpr int kJobViewStatsColumn = 36;
inline constexpr const char kGetJobViewInShardName[] = "belfry_get_job_view_in_shard";
inline constexpr const char kGetJobViewInShardSql[] =
    "SELECT j.*, s.* FROM (SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE shard = $2::smallint AND id = $1)"
    BELFRY_JOB_VIEW_STATS;
inline constexpr const char kGetJobViewName[] = "belfry_get_job_view";
inline constexpr const char kGetJobViewSql[] =
    "SELECT j.*, s.* FROM (SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE id = $1)" BELFRY_JOB_VIEW_STATS;
// The same read aimed at one partition by name (migration 0005 creates jobs_shard_000 ..
// jobs_shard_119): a plan over the parent locks and prunes all 121 partitions on every execution,
// a third of the rate of the direct read (pgbench, 5M jobs: 15k against 45k statements/s on 2
// clients). $1 id. PgJobStore prepares one per shard on first use.
inline constexpr int32_t kJobPartitions = 120;
inline std::string GetJobViewInPartitionName(int32_t shard) {
  return "belfry_get_job_view_" + std::to_string(shard);
}
inline std::string GetJobViewInPartitionSql(int32_t shard) {
  std::string table = std::to_string(shard);
  table.insert(0, 3 - std::min<size_t>(3, table.size()), '0');
  return "SELECT j.*, s.* FROM (SELECT " BELFRY_JOB_COLUMNS " FROM jobs_shard_" + table + " WHERE id = $1)"
         BELFRY_JOB_VIEW_STATS;
}
#undef BELFRY_JOB_VIEW_STATS

// Keyset pagination: $1 = after_id, $2 = limit, then the filters. One statement per filter shape,
// so each prepared plan can use its own index (pkey, (owner, id) or (topic, id)).
inline constexpr const char kListJobsName[] = "belfry_list_jobs";
inline constexpr const char kListJobsSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE id > $1 ORDER BY id LIMIT $2";
inline constexpr const char kListJobsByOwnerName[] = "belfry_list_jobs_by_owner";
inline constexpr const char kListJobsByOwnerSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE owner = $3 AND id > $1 ORDER BY id LIMIT $2";
inline constexpr const char kListJobsByTopicName[] = "belfry_list_jobs_by_topic";
inline constexpr const char kListJobsByTopicSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE topic = $3 AND id > $1 ORDER BY id LIMIT $2";
// By labels (migration 0013): $5 a canonical label object the job's labels must contain, and
// optionally $3 an owner and $4 a topic ('' for any). `labels <> '{}'` repeats the predicate of
// the partial GIN index, so that the planner may use it.
inline constexpr const char kListJobsByLabelsName[] = "belfry_list_jobs_by_labels";
inline constexpr const char kListJobsByLabelsSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE labels @> $5::jsonb AND labels <> '{}'::jsonb"
    " AND ($3 = '' OR owner = $3) AND ($4 = '' OR topic = $4) AND id > $1 ORDER BY id LIMIT $2";
inline constexpr const char kListJobsByOwnerTopicName[] = "belfry_list_jobs_by_owner_topic";
inline constexpr const char kListJobsByOwnerTopicSql[] =
    "SELECT " BELFRY_JOB_COLUMNS
    " FROM jobs WHERE owner = $3 AND topic = $4 AND id > $1 ORDER BY id LIMIT $2";
// By id prefix (GET /v1/jobs?id_prefix=, the console's search), any other filter optional: $3 the
// prefix, $4 an owner, $5 a topic ('' for any), $6 a canonical label object ('{}' for any).
// - On a byte-ordered database (PgSession::byte_ordered_text), $7 is PrefixUpperBound($3): the ids
//   of the prefix are the index range [$3, $7), an index condition of every partition's scan, so
//   that a page stops at the prefix's end in each partition. (As a filter, under the admin
//   sessions' generic plans, each partition scanned to its end: 5M jobs timed out at 2 s.)
// - On another collation the prefix's ids need not be one range: the filter alone decides
//   (kListJobsByPrefixFilterSql), which reads along the id order; see docs/console.md.
#define BELFRY_LIST_BY_PREFIX_FILTERS \
  " AND starts_with(id, $3) AND ($4 = '' OR owner = $4) AND ($5 = '' OR topic = $5) AND labels @> $6::jsonb"
inline constexpr const char kListJobsByPrefixName[] = "belfry_list_jobs_by_prefix";
inline constexpr const char kListJobsByPrefixSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE id > $1 AND id >= $3 AND id < $7" BELFRY_LIST_BY_PREFIX_FILTERS
    " ORDER BY id LIMIT $2";
inline constexpr const char kListJobsByPrefixFilterName[] = "belfry_list_jobs_by_prefix_filter";
inline constexpr const char kListJobsByPrefixFilterSql[] =
    "SELECT " BELFRY_JOB_COLUMNS " FROM jobs WHERE id > $1" BELFRY_LIST_BY_PREFIX_FILTERS " ORDER BY id LIMIT $2";
#undef BELFRY_LIST_BY_PREFIX_FILTERS

inline constexpr const char kCountJobsName[] = "belfry_count_jobs";
inline constexpr const char kCountJobsSql[] = "SELECT count(*) FROM jobs";

}  // namespace belfry::pg_queries
