#include "pg/pg_rows.h"

#include <simdjson.h>

#include <string>
#include <utility>

#include "core/job_labels.h"

namespace belfry {

std::optional<int64_t> OptionalInt64(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<int64_t>();
}

// jsonb prints its own way ({"k": "v"}, keys by length first): back to the canonical object of
// core/job_labels.h, that the views print and the fakes compare.
std::string CanonicalLabels(const std::string& jsonb_text) {
  if (jsonb_text == "{}") return {};
  thread_local simdjson::dom::parser parser;  // one per thread, not one per labelled row read
  simdjson::dom::element el;
  std::string canonical;
  if (parser.parse(jsonb_text).get(el) != simdjson::SUCCESS || !ParseLabels(el, &canonical).ok()) return jsonb_text;
  return canonical;
}

StoredJob StoredJobFromRow(const pqxx::row& row) {
  StoredJob job;
  JobSpec& s = job.spec;
  s.id = row[0].as<std::string>();
  s.owner = row[1].as<std::string>();
  s.interval_minutes = row[2].as<int32_t>();
  s.offset_minutes = row[3].as<int32_t>();
  s.shard = row[4].as<int32_t>();
  s.topic = row[5].as<std::string>();
  s.key = row[6].as<std::string>();
  s.details_json = row[7].as<std::string>();
  s.start_at = OptionalInt64(row[8]);
  s.end_at = OptionalInt64(row[9]);
  s.priority = row[10].as<int32_t>();
  job.paused = row[11].as<bool>();
  job.created_at = row[12].as<int64_t>();
  job.updated_at = row[13].as<int64_t>();
  job.source.partition = row[14].as<int32_t>();
  job.source.offset = row[15].as<int64_t>();
  s.run_at = OptionalInt64(row[16]);
  s.run_minute = OptionalInt64(row[17]).value_or(0);
  s.scheduled_for_ms = OptionalInt64(row[18]).value_or(0);
  s.max_retries = row[19].as<int32_t>();
  s.retry_backoff.initial_ms = row[20].as<int64_t>();
  s.retry_backoff.multiplier = row[21].as<double>();
  s.retry_backoff.max_ms = row[22].as<int64_t>();
  s.attempt = row[23].as<int32_t>();
  s.retry_of = row[24].as<std::string>();
  if (!row[25].is_null()) {
    CalendarSpec cal;
    cal.cron = row[25].as<std::string>();
    cal.time_zone = row[26].is_null() ? std::string() : row[26].as<std::string>();
    cal.as_interval = s.interval_minutes > 0;  // slots are not read back
    s.calendar = std::move(cal);
  }
  if (!row[27].is_null()) job.pause_reason = row[27].as<std::string>();
  if (!row[28].is_null()) job.pause_actor = row[28].as<std::string>();
  job.paused_at = OptionalInt64(row[29]);
  s.labels_json = CanonicalLabels(row[35].as<std::string>());  // migration 0013
  // migration 0012: end_at above is the end the tick applies; a limited job asked for this one.
  if (!row[30].is_null()) {
    s.max_fires = row[30].as<int32_t>();
    s.fires_before = row[31].as<int32_t>();
    s.fires_from_ms = OptionalInt64(row[32]).value_or(0);
    s.requested_end_at = OptionalInt64(row[33]);
    s.requested_start_at = OptionalInt64(row[34]);
  } else {
    s.requested_start_at = s.start_at;
    s.requested_end_at = s.end_at;
  }
  return job;
}

std::optional<ExecutionStatus> ExecutionStatusFromName(std::string_view s) {
  if (s == "succeeded") return ExecutionStatus::kSucceeded;
  if (s == "failed") return ExecutionStatus::kFailed;
  if (s == "running") return ExecutionStatus::kRunning;
  return std::nullopt;
}

JobStats JobStatsFromRow(const pqxx::row& row, size_t first) {
  JobStats s;
  const auto col = [&](size_t i) { return row[static_cast<pqxx::row::size_type>(first + i)]; };
  s.job_id = col(0).as<std::string>();
  if (!col(1).is_null()) s.last_status = ExecutionStatusFromName(col(1).as<std::string>());
  s.last_scheduled_for_ms = col(2).as<int64_t>();
  s.last_attempt = col(3).as<int32_t>();
  s.last_error = col(4).as<std::string>();
  s.last_finished_at = OptionalInt64(col(5));
  s.consecutive_failures = col(6).as<int64_t>();
  s.total_succeeded = col(7).as<int64_t>();
  s.total_failed = col(8).as<int64_t>();
  s.last_success_scheduled_for_ms = OptionalInt64(col(9));
  return s;
}

}  // namespace belfry
