#include "core/job_json.h"

#include <fmt/format.h>

#include "core/iso_time.h"
#include "core/json_writer.h"

namespace belfry {
std::string EncodeJobJson(const StoredJob& job) {
  const JobSpec& s = job.spec;
  std::string out = "{\"id\":";
  AppendJsonString(&out, s.id);
  out.append(",\"owner\":");
  AppendJsonString(&out, s.owner);
  out.append(",\"topic\":");
  AppendJsonString(&out, s.topic);
  out.append(",\"key\":");
  if (s.key.empty()) {
    out.append("null");
  } else {
    AppendJsonString(&out, s.key);
  }
  fmt::format_to(std::back_inserter(out), ",\"intervalMinutes\":{},\"offsetMinutes\":{},\"shard\":{}",
                 s.interval_minutes, s.offset_minutes, s.shard);
  out.append(",\"cron\":");
  if (s.calendar) {
    AppendJsonString(&out, s.calendar->cron);
    out.append(",\"timeZone\":");
    AppendJsonString(&out, s.calendar->time_zone);
  } else {
    out.append("null,\"timeZone\":null");
  }
  out.append(",\"startDateTime\":");
  AppendJsonTimeOrNull(&out, s.start_at);
  out.append(",\"endDateTime\":");
  AppendJsonTimeOrNull(&out, s.end_at);
  fmt::format_to(std::back_inserter(out), ",\"paused\":{},\"priority\":{}", job.paused ? "true" : "false", s.priority);
  out.append(",\"runAt\":");
  AppendJsonTimeOrNull(&out, s.run_at);
  out.append(",\"scheduledFor\":");
  AppendJsonTimeOrNull(&out, s.one_shot() ? std::optional<EpochMs>(s.scheduled_for_ms) : std::nullopt);
  fmt::format_to(std::back_inserter(out),
                 ",\"maxRetries\":{},\"retryBackoff\":{{\"initialSeconds\":{},\"multiplier\":{},\"maxSeconds\":{}}}",
                 s.max_retries, s.retry_backoff.initial_ms / 1000, s.retry_backoff.multiplier,
                 s.retry_backoff.max_ms / 1000);
  if (s.attempt > 0) {  // a row belfry stores for a scheduled retry
    out.append(",\"retryOf\":");
    AppendJsonString(&out, s.retry_of);
    fmt::format_to(std::back_inserter(out), ",\"attempt\":{}", s.attempt);
  }
  out.append(",\"jobDetails\":");
  out.append(s.details_json.empty() ? "{}" : s.details_json);
  out.append(",\"createdAt\":");
  AppendJsonTimeOrNull(&out, job.created_at ? std::optional<EpochMs>(job.created_at) : std::nullopt);
  out.append(",\"updatedAt\":");
  AppendJsonTimeOrNull(&out, job.updated_at ? std::optional<EpochMs>(job.updated_at) : std::nullopt);
  out.push_back('}');
  return out;
}

}  // namespace belfry
