// GET /v1/jobs/{id}/changes: a page of the job's audit trail, newest first (docs/audit-trail.md).
#include <httplib.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/job_change.h"
#include "core/pagination.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/request_params.h"

namespace belfry {

void ServeChanges(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"limit", "cursor"}); !e.empty()) return SendError(res, 400, e);
  int32_t limit = 0;
  if (std::string e = PageLimitParam(req, kChangePage, kChangePage.max_limit, &limit); !e.empty()) {
    return SendError(res, 400, e);
  }
  int64_t before = 0;  // the cursor is the change id the previous page ended at (core/pagination.h)
  if (std::string e = IntParam(req, "cursor", 1, std::numeric_limits<int64_t>::max(), &before); !e.empty()) {
    return SendError(res, 400, kInvalidCursorMessage);
  }
  std::optional<StatusOr<std::vector<JobChange>>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.jobs->ListJobChanges(id, before, limit); });
  if (!read) return SendSessionsBusy(ctx, res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  SendJsonText(res, 200, EncodeJobChangePage(id, **read, limit));
}

}  // namespace belfry
