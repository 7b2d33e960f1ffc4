#include "core/job_json.h"

#include <fmt/format.h>

#include "core/derived_row_id.h"
#include "core/iso_time.h"
#include "core/json_writer.h"

namespace belfry {
std::vector<JobViewField> JobViewFields(const StoredJob& job) {
  const JobSpec& s = job.spec;
  std::vector<JobViewField> f;
  f.reserve(28);
  auto add = [&f](std::string_view name) -> std::string* {
    f.push_back(JobViewField{name, {}});
    return &f.back().value;
  };
  auto time = [&add](std::string_view name, const std::optional<EpochMs>& t) { AppendJsonTimeOrNull(add(name), t); };
  AppendJsonString(add("id"), s.id);
  AppendJsonStringOrNull(add("owner"), s.owner);
  AppendJsonString(add("topic"), s.topic);
  AppendJsonStringOrNull(add("key"), s.key);
  add("labels")->append(s.labels_json.empty() ? "{}" : s.labels_json);
  *add("intervalMinutes") = std::to_string(s.interval_minutes);
  *add("offsetMinutes") = std::to_string(s.offset_minutes);
  *add("shard") = std::to_string(s.shard);
  if (s.calendar) {
    AppendJsonString(add("cron"), s.calendar->cron);
    AppendJsonString(add("timeZone"), s.calendar->time_zone);
  } else {
    *add("cron") = "null";
    *add("timeZone") = "null";
  }
  time("startDateTime", s.max_fires ? s.requested_start_at : s.start_at);
  time("endDateTime", s.max_fires ? s.requested_end_at : s.end_at);
  *add("maxFires") = s.max_fires ? std::to_string(*s.max_fires) : std::string("null");
  time("firesEndAt", s.max_fires ? s.end_at : std::nullopt);
  *add("paused") = job.paused ? "true" : "false";
  *add("priority") = std::to_string(s.priority);
  // While paused: why, who and since when (the pause command's note; null fields when absent).
  std::string* pause = add("pause");
  if (!job.paused) {
    *pause = "null";
  } else {
    pause->append("{\"reason\":");
    AppendJsonStringOrNull(pause, job.pause_reason);
    pause->append(",\"actor\":");
    AppendJsonStringOrNull(pause, job.pause_actor);
    pause->append(",\"since\":");
    AppendJsonTimeOrNull(pause, job.paused_at);
    pause->push_back('}');
  }
  time("runAt", s.run_at);
  time("scheduledFor", s.one_shot() ? std::optional<EpochMs>(s.scheduled_for_ms) : std::nullopt);
  *add("maxRetries") = std::to_string(s.max_retries);
  *add("retryBackoff") = fmt::format(R"({{"initialSeconds":{},"multiplier":{},"maxSeconds":{}}})",
                                     s.retry_backoff.initial_ms / 1000, s.retry_backoff.multiplier,
                                     s.retry_backoff.max_ms / 1000);
  if (s.attempt > 0) {  // a row belfry stores for a scheduled retry
    AppendJsonString(add("retryOf"), s.retry_of);
    *add("attempt") = std::to_string(s.attempt);
  } else if (!s.retry_of.empty()) {  // a row a trigger or backfill command stored
    const std::optional<DerivedRowRef> derived = ParseDerivedRowId(s.id);
    AppendJsonString(add("manualOf"), s.retry_of);
    AppendJsonString(add("manual"), derived ? DerivedKindName(derived->kind) : "trigger");
  }
  add("jobDetails")->append(s.details_json.empty() ? "{}" : s.details_json);
  time("createdAt", job.created_at ? std::optional<EpochMs>(job.created_at) : std::nullopt);
  time("updatedAt", job.updated_at ? std::optional<EpochMs>(job.updated_at) : std::nullopt);
  return f;
}

std::string EncodeJobViewFields(const std::vector<JobViewField>& fields) {
  size_t size = 2;
  for (const JobViewField& f : fields) size += f.name.size() + f.value.size() + 4;
  std::string out;
  out.reserve(size);
  out.push_back('{');
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.push_back('"');
    out.append(fields[i].name);  // a name of JobViewFields: nothing to escape
    out.append("\":");
    out.append(fields[i].value);
  }
  out.push_back('}');
  return out;
}

std::string EncodeJobJson(const StoredJob& job) { return EncodeJobViewFields(JobViewFields(job)); }

std::string EncodeJobListItemJson(const StoredJob& job, std::optional<EpochMs> next_trigger) {
  std::string out = EncodeJobJson(job);
  out.pop_back();  // the closing brace: the next trigger follows
  out.append(",\"nextTriggerAt\":");
  AppendJsonTimeOrNull(&out, next_trigger);
  out.push_back('}');
  return out;
}

std::string EncodeJobDetailJson(const StoredJob& job, const std::optional<JobStats>& stats,
                                const std::vector<NextFire>& fires, std::optional<int64_t> fires_remaining,
                                const std::optional<DeliveryErrorRecord>& last_delivery_error) {
  std::string out =
      EncodeJobListItemJson(job, fires.empty() ? std::nullopt : std::optional<EpochMs>(fires.front().at));
  out.pop_back();  // the closing brace: the detail fields follow
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
