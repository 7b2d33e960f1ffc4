#include "core/job_change.h"

#include <fmt/format.h>

#include <iterator>

#include "core/job_json.h"
#include "core/json_writer.h"

namespace belfry {

namespace {

// `json` (an EncodeJobJson) up to its updatedAt, which EncodeJobJson writes last: jobDetails,
// before it, may hold the same text, so the last occurrence is the field.
std::string_view WithoutUpdatedAt(std::string_view json) {
  const size_t at = json.rfind(",\"updatedAt\":");
  return at == std::string_view::npos ? json : json.substr(0, at);
}

}  // namespace

std::optional<JobChange> JobChangeBetween(const std::string& job_id, const std::string& op,
                                          const std::optional<StoredJob>& before,
                                          const std::optional<StoredJob>& after) {
  if (!before && !after) return std::nullopt;
  JobChange change;
  change.job_id = job_id;
  change.op = op;
  if (before) change.before_json = EncodeJobJson(*before);
  if (after) change.after_json = EncodeJobJson(*after);
  if (before && after && WithoutUpdatedAt(change.before_json) == WithoutUpdatedAt(change.after_json)) {
    return std::nullopt;
  }
  return change;
}

namespace {

void AppendRawJsonOrNull(std::string* out, const std::string& json) { out->append(json.empty() ? "null" : json); }

}  // namespace

std::string EncodeJobChangeJson(const JobChange& c) {
  std::string out;
  out.reserve(256 + c.before_json.size() + c.after_json.size() + c.detail_json.size());
  fmt::format_to(std::back_inserter(out), "{{\"version\":{},\"changeId\":{},\"jobId\":", kJobChangeEventVersion,
                 c.change_id);
  AppendJsonString(&out, c.job_id);
  out.append(",\"op\":");
  AppendJsonString(&out, c.op);
  out.append(",\"bulkId\":");
  AppendJsonStringOrNull(&out, c.bulk_id);
  out.append(",\"actor\":");
  AppendJsonStringOrNull(&out, c.actor);
  out.append(",\"reason\":");
  AppendJsonStringOrNull(&out, c.reason);
  fmt::format_to(std::back_inserter(out), ",\"source\":{{\"partition\":{},\"offset\":{},\"timestamp\":",
                 c.source.partition, c.source.offset);
  AppendJsonTimeOrNull(&out, c.source.timestamp_ms);
  out.append("},\"changedAt\":");
  AppendJsonTimeOrNull(&out, c.changed_at);
  out.append(",\"before\":");
  AppendRawJsonOrNull(&out, c.before_json);
  out.append(",\"after\":");
  AppendRawJsonOrNull(&out, c.after_json);
  out.append(",\"detail\":");
  AppendRawJsonOrNull(&out, c.detail_json);
  out.push_back('}');
  return out;
}

std::string EncodeJobChangePage(const std::string& job_id, const std::vector<JobChange>& changes, int64_t limit) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, job_id);
  out.append(",\"changes\":[");
  for (size_t i = 0; i < changes.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(EncodeJobChangeJson(changes[i]));
  }
  out.append("],\"next_cursor\":");
  const bool full = !changes.empty() && static_cast<int64_t>(changes.size()) >= limit;
  AppendJsonStringOrNull(&out, full ? std::to_string(changes.back().change_id) : std::string());
  out.push_back('}');
  return out;
}

}  // namespace belfry
