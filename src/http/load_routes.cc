// GET /v1/load (the load projection of a window) and /v1/load/rebalance (proposed offset moves),
// docs/load-projection.md.
#include <httplib.h>

#include <atomic>
#include <optional>
#include <string>

#include "core/load_projection.h"
#include "core/load_rebalance.h"
#include "core/pagination.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/request_params.h"

namespace belfry {
namespace {

}  // namespace

void ServeLoad(AdminContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"from", "to", "by", "shards", "top"}); !e.empty()) {
    return SendError(res, 400, e);
  }
  ShardLayout layout;
  if (!ReadLayout(ctx, res, &layout)) return;
  StatusOr<LoadWindow> window = ParseLoadWindow(Param(req, "from"), Param(req, "to"), ctx.deps.clock->NowMs(),
                                                layout, ctx.options.scheduler.intervals);
  if (!window.ok()) return SendError(res, 400, window.status().message());
  LoadGroupQuery query{window->first_minute, window->last_minute, Param(req, "by")};
  // A breakdown can have a group per job; inside a serving node, read at most this many (~100 MB).
  query.max_groups = ctx.options.load_max_groups;
  if (StatusOr<LoadBreakdown> by = ParseLoadBreakdown(query.by); !by.ok()) {
    return SendError(res, 400, by.status().message());
  }
  const std::string shards = Param(req, "shards");
  if (!shards.empty() && shards != "true" && shards != "false") {
    return SendError(res, 400, "shards must be true or false, got \"" + shards + "\"");
  }
  int64_t top = kLoadBreakdownTop.default_limit;
  if (std::string e = IntParam(req, "top", 1, kLoadBreakdownTop.max_limit, &top); !e.empty()) {
    return SendError(res, 400, e);
  }
  if (ctx.loads_in_flight.fetch_add(1) > 0) {
    ctx.loads_in_flight.fetch_sub(1);
    return SendOverloaded(ctx, res, "another load projection is running");
  }
  struct Done {
    std::atomic<int>& n;
    ~Done() { n.fetch_sub(1); }
  } done{ctx.loads_in_flight};
  std::optional<StatusOr<LoadGroups>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.load->ReadLoadGroups(query); });
  if (!read) return SendSessionsBusy(ctx, res);
  if (!read->ok()) {
    if (read->status().reason() == "too_many_groups") return SendError(res, 422, read->status().message());
    return SendStoreError(res, "job store", read->status());
  }
  const LoadProjection p = ProjectLoad(*ctx.deps.time_zones, *window, **read);
  SendJsonText(res, 200, EncodeLoadProjectionJson(p, query.by, shards == "true", static_cast<int>(top)));
}

void ServeRebalance(AdminContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"ids"}); !e.empty()) return SendError(res, 400, e);
  int64_t ids = 5;
  if (std::string e = IntParam(req, "ids", 0, 100, &ids); !e.empty()) return SendError(res, 400, e);
  std::optional<StatusOr<RebalancePlan>> read = ReadWith(
      *ctx.deps.readers, [&](const ReadSession& s) { return ProposeRebalance(*s.load, static_cast<int32_t>(ids)); });
  if (!read) return SendSessionsBusy(ctx, res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  SendJsonText(res, 200, EncodeRebalancePlanJson(**read));
}

}  // namespace belfry
