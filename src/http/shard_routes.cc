// GET /v1/shards: every shard's watermark, claim, lag and catch-up debt.
#include <httplib.h>

#include <optional>
#include <vector>

#include "core/resource_views.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"

namespace belfry {

void ServeShards(AdminContext& ctx, httplib::Response& res) {
  ShardLayout layout;
  if (!ReadLayout(ctx, res, &layout)) return;
  std::optional<StatusOr<std::vector<ShardState>>> read =
      ReadWith(*ctx.deps.readers, [&](const ReadSession& s) { return s.ledger->LoadStates(); });
  if (!read) return SendSessionsBusy(ctx, res);
  StatusOr<std::vector<ShardState>>& states = *read;
  if (!states.ok()) return SendStoreError(res, "shard ledger", states.status());
  SendJsonText(res, 200, EncodeShardsView(*states, layout, ctx.deps.clock->NowMs()));
}

}  // namespace belfry
