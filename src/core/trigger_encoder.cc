#include "core/trigger_encoder.h"

#include <fmt/format.h>

#include <charconv>

#include "core/iso_time.h"
#include "core/json_writer.h"

namespace belfry {

void EncodeTriggerValue(const TriggerView& t, std::string* out) {
  out->clear();
  out->reserve(96 + t.job_id.size() + t.details_json.size());
  out->append("{\"jobId\":");
  AppendJsonString(out, t.job_id);
  out->append(",\"scheduledFor\":\"");
  AppendIsoTime(t.scheduled_for_ms, out);
  out->append("\",\"intervalMinutes\":");
  char digits[16];
  out->append(digits, std::to_chars(digits, digits + sizeof(digits), t.interval_minutes).ptr);
  if (t.attempt > 0) fmt::format_to(std::back_inserter(*out), ",\"attempt\":{}", t.attempt);
  if (!t.manual.empty()) {
    out->append(",\"manual\":");
    AppendJsonString(out, t.manual);
  }
  out->append(",\"jobDetails\":");
  out->append(t.details_json.empty() ? std::string_view("{}") : t.details_json);
  out->push_back('}');
}

std::string ScheduledForHeader(EpochMs scheduled_for_ms) { return fmt::format("{}", scheduled_for_ms); }

}  // namespace belfry

namespace belfry {

std::string AttemptHeader(int32_t attempt) { return fmt::format("{}", attempt); }

}  // namespace belfry
