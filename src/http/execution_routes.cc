// GET /v1/jobs/{id}/executions: a page of the job's execution history, newest first.
#include <httplib.h>

#include <optional>
#include <string>

#include "core/pagination.h"
#include "core/resource_views.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/request_params.h"

namespace belfry {

void ServeExecutions(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"limit", "cursor"}); !e.empty()) return SendError(res, 400, e);
  if (!ctx.deps.readers->has_executions()) return SendError(res, 404, "execution history is not enabled on this node");
  int32_t limit = 0;
  if (std::string e = PageLimitParam(req, kExecutionPage, kExecutionPage.max_limit, &limit); !e.empty()) {
    return SendError(res, 400, e);
  }
  std::string cursor;
  if (std::string e = PageCursorParam(req, &cursor); !e.empty()) return SendError(res, 400, e);
  std::optional<StatusOr<ExecutionPage>> read = ReadWith(
      *ctx.deps.readers, [&](const ReadSession& s) { return s.executions->ListExecutions(id, limit, cursor); });
  if (!read) return SendSessionsBusy(ctx, res);
  StatusOr<ExecutionPage>& page = *read;
  if (!page.ok()) {
    if (page.status().code() == Status::Code::kInvalid) return SendError(res, 400, kInvalidCursorMessage);
    return SendStoreError(res, "execution store", page.status());
  }
  SendJsonText(res, 200, EncodeExecutionPage(id, *page));
}

}  // namespace belfry
