#include "core/resource_views.h"

#include "core/bulk_op_json.h"
#include "core/execution_report.h"
#include "core/iso_time.h"
#include "core/job_json.h"
#include "core/json_writer.h"
#include "core/layout_next_fires.h"
#include "core/pagination.h"
#include "core/shard_lag.h"
#include "core/slot_math.h"

namespace belfry {
namespace {

void AppendIntOrNull(std::string* out, const std::optional<int64_t>& v) {
  out->append(v ? std::to_string(*v) : "null");
}

const char* Bool(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string EncodeJobDetailView(const TimeZoneDatabase& zones, const JobAndStats& job, const std::optional<JobStats>& stats,
                                const ShardLayout& layout, EpochMs now) {
  const StoredJob& j = job.job;
  const std::vector<NextFire> fires = LayoutNextFires(zones, j.spec, j.paused, layout, now, kJobDetailNextFires);
  const std::optional<int64_t> remaining = LayoutFiresRemaining(zones, j.spec, j.paused, j.paused_at, layout, now);
  return EncodeJobDetailJson(j, stats, fires, remaining, job.last_delivery_error);
}

std::string EncodeJobPage(const TimeZoneDatabase& zones, const JobPage& page, const ShardLayout& layout, EpochMs now) {
  std::string out = "{\"jobs\":[";
  for (size_t i = 0; i < page.jobs.size(); ++i) {
    const StoredJob& j = page.jobs[i];
    if (i > 0) out.push_back(',');
    const std::vector<NextFire> next = LayoutNextFires(zones, j.spec, j.paused, layout, now, 1);
    out.append(EncodeJobListItemJson(j, next.empty() ? std::nullopt : std::optional<EpochMs>(next.front().at)));
  }
  out.append("],\"next_cursor\":");
  AppendJsonStringOrNull(&out, EncodePageCursor(page.next_after_id));
  out.push_back('}');
  return out;
}

std::string EncodeExecutionPage(const std::string& job_id, const ExecutionPage& page) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, job_id);
  out.append(",\"executions\":[");
  for (size_t i = 0; i < page.records.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(EncodeExecutionRecord(page.records[i]));
  }
  out.append("],\"next_cursor\":");
  AppendJsonStringOrNull(&out, EncodePageCursor(page.next_cursor));
  out.push_back('}');
  return out;
}

std::string EncodeShardsView(const std::vector<ShardState>& states, const ShardLayout& layout, EpochMs now) {
  std::string out = "{\"now\":";
  AppendJsonString(&out, FormatIsoTime(now));
  out.append(",\"shards\":[");
  for (size_t i = 0; i < states.size(); ++i) {
    const ShardState& s = states[i];
    const ShardLag lag = ComputeShardLag(s, now, layout);
    if (i > 0) out.push_back(',');
    out.append("{\"shard\":" + std::to_string(s.shard) + ",\"fired_through\":");
    AppendJsonTimeOrNull(&out, s.fired_through ? std::optional<EpochMs>(MinuteStartMs(*s.fired_through))
                                               : std::nullopt);
    out.append(",\"fired_through_minute\":");
    AppendIntOrNull(&out, s.fired_through);
    out.append(",\"claim_node\":");
    AppendJsonStringOrNull(&out, s.claim_node);
    out.append(",\"claim_until\":");
    AppendJsonTimeOrNull(&out, s.claim_until);
    out.append(",\"claim_live\":");
    out.append(Bool(s.claim_live));
    out.append(",\"behind_minutes\":");
    AppendIntOrNull(&out, lag.behind_minutes);
    out.append(",\"lag_seconds\":");
    if (lag.lag_seconds) {
      AppendJsonNumber(&out, *lag.lag_seconds);
    } else {
      out.append("null");
    }
    out.append(",\"debt_minutes\":" + std::to_string(s.debt_minutes) + ",\"debt_first_minute\":");
    AppendIntOrNull(&out, s.debt_first);
    out.append(",\"debt_node\":");
    AppendJsonStringOrNull(&out, s.debt_node);
    out.append(",\"debt_live\":");
    out.append(Bool(s.debt_live));
    out.push_back('}');
  }
  out.append("]}");
  return out;
}

std::string EncodeNextFiresView(const StoredJob& job, const std::vector<NextFire>& fires) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, job.spec.id);
  out.append(",\"paused\":");
  out.append(Bool(job.paused));
  out.append(",\"next\":[");
  for (size_t i = 0; i < fires.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(&out, FormatIsoTime(fires[i].at));
  }
  out.append("],\"fires\":");
  out.append(EncodeNextFires(fires));
  if (job.spec.calendar) {
    out.append(",\"cron\":");
    AppendJsonString(&out, job.spec.calendar->cron);
    out.append(",\"timeZone\":");
    AppendJsonString(&out, job.spec.calendar->time_zone);
  }
  out.push_back('}');
  return out;
}

std::string EncodeBackfillCountView(const std::string& job_id, EpochMs from, EpochMs to,
                                    const ManualFireResult& counted) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, job_id);
  out.append(",\"from\":");
  AppendJsonString(&out, FormatIsoTime(from));
  out.append(",\"to\":");
  AppendJsonString(&out, FormatIsoTime(to));
  out.append(",\"slots\":" + std::to_string(counted.slots) + ",\"covered\":" + std::to_string(counted.covered) + "}");
  return out;
}

std::string EncodeBulkOpList(const std::vector<BulkOpState>& ops) {
  std::string out = "{\"bulkOps\":[";
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(EncodeBulkOpJson(ops[i]));
  }
  out.append("]}");
  return out;
}

}  // namespace belfry
