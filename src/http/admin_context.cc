#include "http/admin_context.h"

#include <httplib.h>

#include "http/admin_responses.h"

namespace belfry {

void SendOverloaded(const AdminContext& ctx, httplib::Response& res, const std::string& why) {
  res.set_header("Retry-After", std::to_string(ctx.options.retry_after_s));
  SendError(res, 503, "overloaded (" + why + "), retry after " + std::to_string(ctx.options.retry_after_s) + " s");
}

void SendSessionsBusy(const AdminContext& ctx, httplib::Response& res) {
  ctx.counters.sessions.Increment();
  SendOverloaded(ctx, res, "every database session is busy");
}

bool ReadLayout(const AdminContext& ctx, httplib::Response& res, ShardLayout* layout) {
  std::optional<StatusOr<ShardLayout>> read =
      ReadWith(*ctx.deps.readers, [](const ReadSession& s) { return s.ledger->ReadLayout(); });
  if (!read) {
    SendSessionsBusy(ctx, res);
    return false;
  }
  if (!read->ok()) {
    SendStoreError(res, "shard ledger", read->status());
    return false;
  }
  *layout = **read;
  return true;
}

}  // namespace belfry
