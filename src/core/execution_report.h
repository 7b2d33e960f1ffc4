// ExecutionReport parsing and the per-job counters, on plain values. The execution consumer
// (src/kafka/execution_consumer) only does I/O around these. See docs/executions.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/execution.h"
#include "belfry/status.h"

namespace belfry {

// A Kafka message from the executions topic, before parsing.
struct RawExecution {
  std::optional<std::string> key;
  std::optional<std::string> value;
  SourcePosition source;
};

struct ExecutionRules {
  int64_t max_value_bytes = 64 * 1024;
  int64_t max_error_bytes = 4096;  // a longer error is truncated (at a UTF-8 boundary), not rejected
};

// Returns the report, or Invalid with a stable reason (the DLQ's belfry-error is
// "<reason>: <message>"): tombstone, then the rules every JSON message shares (too_large,
// invalid_utf8, invalid_json, invalid_number, too_deep beyond 32 levels, not_object,
// unknown_field, duplicate_field; see core/json_object_fields.h), then wrong_type, missing_field,
// invalid_id, key_mismatch, invalid_date, invalid_status, invalid_worker, invalid_attempt; or
// Retryable if the JSON parser cannot allocate. Never throws, for any bytes. Thread-safe.
StatusOr<ExecutionReport> ParseExecutionReport(const RawExecution& raw, const ExecutionRules& rules);

// The history value, as the HTTP API and `belfry jobs history --json` print it:
// {"jobId","scheduledFor","attempt","status","error","startedAt","finishedAt","worker","receivedAt"}.
std::string EncodeExecutionRecord(const ExecutionRecord& record);

// Folds newly stored reports into a job's counters (see JobStats). `fresh` are reports that were
// not stored before (the store dedupes by key first), of this job, in any order; running reports
// are ignored. Deterministic: the result does not depend on the order of `fresh`.
JobStats FoldJobStats(const std::optional<JobStats>& current, const std::string& job_id,
                      std::vector<ExecutionReport> fresh);

}  // namespace belfry
