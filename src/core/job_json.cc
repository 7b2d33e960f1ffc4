#include "core/job_json.h"

#include <fmt/format.h>

#include "core/derived_row_id.h"
#include "core/iso_time.h"
#include "core/json_writer.h"

namespace belfry {
std::string EncodeJobJson(const StoredJob& job) {
  const JobSpec& s = job.spec;
  std::string out = "{\"id\":";
  AppendJsonString(&out, s.id);
  out.append(",\"owner\":");
  AppendJsonStringOrNull(&out, s.owner);
  out.append(",\"topic\":");
  AppendJsonString(&out, s.topic);
  out.append(",\"key\":");
  AppendJsonStringOrNull(&out, s.key);
  out.append(",\"labels\":");
  out.append(s.labels_json.empty() ? "{}" : s.labels_json);
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
  AppendJsonTimeOrNull(&out, s.max_fires ? s.requested_start_at : s.start_at);
  out.append(",\"endDateTime\":");
  AppendJsonTimeOrNull(&out, s.max_fires ? s.requested_end_at : s.end_at);
  out.append(",\"maxFires\":");
  out.append(s.max_fires ? std::to_string(*s.max_fires) : std::string("null"));
  out.append(",\"firesEndAt\":");
  AppendJsonTimeOrNull(&out, s.max_fires ? s.end_at : std::nullopt);
  fmt::format_to(std::back_inserter(out), ",\"paused\":{},\"priority\":{}", job.paused ? "true" : "false", s.priority);
  // While paused: why, who and since when (the pause command's note; null fields when absent).
  out.append(",\"pause\":");
  if (!job.paused) {
    out.append("null");
  } else {
    out.append("{\"reason\":");
    AppendJsonStringOrNull(&out, job.pause_reason);
    out.append(",\"actor\":");
    AppendJsonStringOrNull(&out, job.pause_actor);
    out.append(",\"since\":");
    AppendJsonTimeOrNull(&out, job.paused_at);
    out.push_back('}');
  }
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
  } else if (!s.retry_of.empty()) {  // a row a trigger or backfill command stored
    const std::optional<DerivedRowRef> derived = ParseDerivedRowId(s.id);
    out.append(",\"manualOf\":");
    AppendJsonString(&out, s.retry_of);
    out.append(",\"manual\":");
    AppendJsonString(&out, derived ? DerivedKindName(derived->kind) : "trigger");
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

std::string EncodeJobDetailJson(const StoredJob& job, const std::optional<JobStats>& stats,
                                const std::vector<NextFire>& fires, std::optional<int64_t> fires_remaining,
                                const std::optional<DeliveryErrorRecord>& last_delivery_error) {
  std::string out = EncodeJobJson(job);
  out.pop_back();  // the closing brace: the detail fields follow
  out.append(",\"nextTriggerAt\":");
  AppendJsonTimeOrNull(&out, fires.empty() ? std::nullopt : std::optional<EpochMs>(fires.front().at));
  out.append(",\"nextFires\":");
  out.append(EncodeNextFires(fires));
  out.append(",\"lastOutcome\":");
  if (stats && stats->last_status) {
    out.append("{\"status\":");
    AppendJsonString(&out, ExecutionStatusName(*stats->last_status));
    out.append(",\"scheduledFor\":");
    AppendJsonTimeOrNull(&out, stats->last_scheduled_for_ms);
    fmt::format_to(std::back_inserter(out), ",\"attempt\":{},\"error\":", stats->last_attempt);
    AppendJsonStringOrNull(&out, stats->last_error);
    out.append(",\"finishedAt\":");
    AppendJsonTimeOrNull(&out, stats->last_finished_at);
    out.push_back('}');
  } else {
    out.append("null");
  }
  fmt::format_to(std::back_inserter(out), ",\"consecutiveFailures\":{},\"totalSucceeded\":{},\"totalFailed\":{}",
                 stats ? stats->consecutive_failures : 0, stats ? stats->total_succeeded : 0,
                 stats ? stats->total_failed : 0);
  out.append(",\"firesRemaining\":");
  out.append(fires_remaining ? std::to_string(*fires_remaining) : std::string("null"));
  out.append(",\"lastDeliveryError\":");
  if (last_delivery_error) {
    out.append("{\"error\":");
    AppendJsonString(&out, last_delivery_error->error);
    out.append(",\"topic\":");
    AppendJsonString(&out, last_delivery_error->topic);
    out.append(",\"slot\":");
    AppendJsonTimeOrNull(&out, last_delivery_error->slot_ms);
    out.append(",\"at\":");
    AppendJsonTimeOrNull(&out, last_delivery_error->at_ms);
    out.push_back('}');
  } else {
    out.append("null");
  }
  out.push_back('}');
  return out;
}

}  // namespace belfry
