// GET /v1/jobs (a page of jobs), GET /v1/jobs/{id} (one job in detail), /v1/jobs/{id}/next (its
// next fires) and /v1/jobs/{id}/backfill (a backfill's dry run).
#include <httplib.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/iso_time.h"
#include "core/job_labels.h"
#include "core/layout_next_fires.h"
#include "core/manual_fire.h"
#include "core/pagination.h"
#include "core/resource_views.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/request_params.h"

namespace belfry {

void ServeGetJob(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {}); !e.empty()) return SendError(res, 400, e);
  ShardLayout layout;
  if (!ReadLayout(ctx, res, &layout)) return;
  std::optional<ReaderPool::Lease> session = ctx.deps.readers->Borrow();
  if (!session) return SendSessionsBusy(ctx, res);
  StatusOr<std::optional<JobAndStats>> job = (*session)->jobs->GetJobAndStats(id);
  if (!job.ok()) return SendStoreError(res, "job store", job.status());
  if (!job->has_value()) return SendError(res, 404, "job \"" + id + "\" not found");
  std::optional<JobStats> stats = std::move((*job)->stats);
  if (!(*job)->stats_read && (*session)->executions != nullptr) {
    StatusOr<std::optional<JobStats>> read = (*session)->executions->GetJobStats(id);
    if (!read.ok()) return SendStoreError(res, "execution store", read.status());
    stats = std::move(*read);
  }
  if (!(*session)->executions) stats.reset();  // a node without history shows no outcomes
  session.reset();
  SendJsonText(res, 200, EncodeJobDetailView(*ctx.deps.time_zones, **job, stats, layout, ctx.deps.clock->NowMs()));
}

void ServeNext(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"n"}); !e.empty()) return SendError(res, 400, e);
  int64_t n = kNextFiresList.default_limit;
  if (std::string e = IntParam(req, "n", 1, kNextFiresList.max_limit, &n); !e.empty()) return SendError(res, 400, e);
  ShardLayout layout;
  if (!ReadLayout(ctx, res, &layout)) return;
  std::optional<StatusOr<std::optional<StoredJob>>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.jobs->GetJob(id); });
  if (!read) return SendSessionsBusy(ctx, res);
  StatusOr<std::optional<StoredJob>>& job = *read;
  if (!job.ok()) return SendStoreError(res, "job store", job.status());
  if (!job->has_value()) return SendError(res, 404, "job \"" + id + "\" not found");
  const StoredJob& j = **job;
  const std::vector<NextFire> fires =
      LayoutNextFires(*ctx.deps.time_zones, j.spec, j.paused, layout, ctx.deps.clock->NowMs(), static_cast<int>(n));
  SendJsonText(res, 200, EncodeNextFiresView(j, fires));
}

void ServeBackfillDryRun(AdminContext& ctx, const std::string& id, const httplib::Request& req,
                         httplib::Response& res) {
  if (std::string e = CheckParams(req, {"from", "to"}); !e.empty()) return SendError(res, 400, e);
  ManualFire fire;
  fire.kind = ManualFire::Kind::kBackfill;
  fire.id = id;
  fire.source.timestamp_ms = ctx.deps.clock->NowMs();
  fire.backfill.dry_run = true;
  for (const char* name : {"from", "to"}) {
    const std::string text = Param(req, name);
    if (text.empty()) return SendError(res, 400, std::string(name) + " is required (ISO-8601)");
    const std::optional<EpochMs> at = ParseIsoTime(text);
    if (!at) return SendError(res, 400, std::string(name) + " is not an ISO-8601 time: \"" + text + "\"");
    (name[0] == 'f' ? fire.backfill.from_ms : fire.backfill.to_ms) = *at;
  }
  if (Status st = CheckBackfillRange(fire.backfill.from_ms, fire.backfill.to_ms, fire.source.timestamp_ms); !st.ok()) {
    return SendError(res, 400, st.message());
  }
  std::optional<StatusOr<ManualFireResult>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.jobs->CountBackfill(fire); });
  if (!read) return SendSessionsBusy(ctx, res);
  StatusOr<ManualFireResult>& counted = *read;
  if (!counted.ok()) {
    if (counted.status().code() == Status::Code::kNotFound) return SendError(res, 404, "job \"" + id + "\" not found");
    return SendStoreError(res, "job store", counted.status());
  }
  if (!counted->status.ok()) return SendError(res, 422, counted->status.message());
  SendJsonText(res, 200, EncodeBackfillCountView(id, fire.backfill.from_ms, fire.backfill.to_ms, *counted));
}

void ServeListJobs(AdminContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"owner", "topic", "limit", "cursor", "label", "id_prefix"}); !e.empty()) {
    return SendError(res, 400, e);
  }
  JobListFilter filter;
  // ?label=key=value, repeatable: jobs whose labels contain every one (core/job_labels.h).
  if (req.has_param("label")) {
    const std::optional<std::vector<std::string>> terms = RawQueryValues(req.target, "label");
    if (!terms) return SendError(res, 400, "label has a malformed percent-escape");
    for (const std::string& term : *terms) {
      if (!IsStorableText(term)) return SendError(res, 400, "label is not valid UTF-8 or contains a NUL byte");
    }
    if (Status s = ParseLabelFilter(*terms, &filter.labels); !s.ok()) return SendError(res, 400, s.message());
  }
  filter.owner = Param(req, "owner");
  filter.topic = Param(req, "topic");
  filter.id_prefix = Param(req, "id_prefix");
  for (const auto& [name, value] : {std::pair<const char*, const std::string&>{"owner", filter.owner},
                                    std::pair<const char*, const std::string&>{"topic", filter.topic},
                                    std::pair<const char*, const std::string&>{"id_prefix", filter.id_prefix}}) {
    if (!IsStorableText(value)) {
      return SendError(res, 400, std::string(name) + " is not valid UTF-8 or contains a NUL byte");
    }
  }
  if (std::string e = PageLimitParam(req, kJobListPage, ctx.options.max_list_limit, &filter.limit); !e.empty()) {
    return SendError(res, 400, e);
  }
  if (std::string e = PageCursorParam(req, &filter.after_id); !e.empty()) return SendError(res, 400, e);
  if (!IsStorableText(filter.after_id)) return SendError(res, 400, kInvalidCursorMessage);
  ShardLayout layout;  // for each job's next trigger
  if (!ReadLayout(ctx, res, &layout)) return;
  std::optional<StatusOr<JobPage>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.jobs->ListJobs(filter); });
  if (!read) return SendSessionsBusy(ctx, res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  SendJsonText(res, 200, EncodeJobPage(*ctx.deps.time_zones, **read, layout, ctx.deps.clock->NowMs()));
}

}  // namespace belfry
