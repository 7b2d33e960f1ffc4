// Decoders of the rows belfry's statements select, shared by the stores that run them. Each
// decoder follows one column list of pg_job_sql.h / pg_execution_queries.h; keep them in step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <pqxx/result>
#include <string_view>

#include "belfry/execution.h"
#include "belfry/job.h"

namespace belfry {

// NULL as nullopt.
std::optional<int64_t> OptionalInt64(const pqxx::field& f);

// "succeeded", "failed", "running"; nullopt for anything else.
std::optional<ExecutionStatus> ExecutionStatusFromName(std::string_view s);

// A row whose first columns are BELFRY_JOB_COLUMNS (pg_job_sql.h).
StoredJob StoredJobFromRow(const pqxx::row& row);

// jsonb's text of a label object (migration 0013), back in core/job_labels.h's canonical form
// ("" for {}); text that is not a valid label object is returned as it is.
std::string CanonicalLabels(const std::string& jsonb_text);

// The columns BELFRY_STATS_COLUMNS (pg_job_sql.h) starting at column `first`. REQUIRES: they are
// not NULL (a LEFT JOIN that found no job_stats row is the caller's to detect).
JobStats JobStatsFromRow(const pqxx::row& row, size_t first = 0);

}  // namespace belfry
