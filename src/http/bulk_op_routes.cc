// GET /v1/bulk-ops (the latest bulk operations) and /v1/bulk-ops/{id} (one and its progress),
// docs/bulk-operations.md.
#include <httplib.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bulk_op_json.h"
#include "core/pagination.h"
#include "core/resource_views.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/request_params.h"

namespace belfry {
namespace {

constexpr std::string_view kBulkOpsPrefix = "/v1/bulk-ops/";

}  // namespace

void ServeListBulkOps(AdminContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"limit"}); !e.empty()) return SendError(res, 400, e);
  int32_t limit = 0;
  if (std::string e = PageLimitParam(req, kBulkOpPage, kBulkOpPage.max_limit, &limit); !e.empty()) {
    return SendError(res, 400, e);
  }
  std::optional<StatusOr<std::vector<BulkOpState>>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.jobs->ListBulkOps(limit); });
  if (!read) return SendSessionsBusy(ctx, res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  SendJsonText(res, 200, EncodeBulkOpList(**read));
}

void ServeGetBulkOp(AdminContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {}); !e.empty()) return SendError(res, 400, e);
  std::string_view raw = req.target;
  raw = raw.substr(0, raw.find('?'));
  raw.remove_prefix(std::min(raw.size(), kBulkOpsPrefix.size()));
  std::string id;
  if (std::string e = DecodePathId(raw, "bulk operation", &id); !e.empty()) return SendError(res, 400, e);
  std::optional<StatusOr<std::optional<BulkOpState>>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.jobs->GetBulkOp(id); });
  if (!read) return SendSessionsBusy(ctx, res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  if (!(*read)->has_value()) return SendError(res, 404, "bulk operation \"" + id + "\" not found");
  SendJsonText(res, 200, EncodeBulkOpJson(***read));
}

}  // namespace belfry
