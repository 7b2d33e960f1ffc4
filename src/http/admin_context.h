// AdminContext: what the admin API's route handlers (admin_routes.h) share: the server's options
// and dependencies, reads through a borrowed database session, and the answers any route may give
// when the node is saturated. One per AdminServer; handlers run on many threads at once.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <type_traits>

#include "belfry/shard_layout.h"
#include "http/admin_admission.h"
#include "http/admin_server.h"
#include "http/reader_pool.h"

namespace httplib {
struct Response;
}  // namespace httplib

namespace belfry {

struct AdminContext {
  const AdminServerOptions& options;
  const AdminDeps& deps;
  AdmissionCounters& counters;
  std::atomic<int> loads_in_flight{0};  // GET /v1/load projections running (at most one)
};

// fn(session) on a session borrowed from `pool`; nullopt when none freed up within its max_wait.
template <typename Fn>
auto ReadWith(ReaderPool& pool, Fn&& fn) -> std::optional<std::invoke_result_t<Fn, const ReadSession&>> {
  std::optional<ReaderPool::Lease> session = pool.Borrow();
  if (!session) return std::nullopt;
  auto result = fn(**session);
  // A Retryable failure dropped the session's connection, which may have been one to a server
  // that is gone (a standby, with standby.admin_reads): one more try reconnects, to the primary
  // if need be. A read has no effect to repeat.
  if (!result.ok() && result.status().retryable()) result = fn(**session);
  return result;
}

// 503 + Retry-After: overloaded, come back later. `why` goes into the error message.
void SendOverloaded(const AdminContext& ctx, httplib::Response& res, const std::string& why);

// SendOverloaded, counted as reason "sessions": no database session freed up in time.
void SendSessionsBusy(const AdminContext& ctx, httplib::Response& res);

// The database's shard layout record, through one borrowed session: what every view of slots,
// lag and load takes (not options.scheduler.shard_count). False after it answered the error.
bool ReadLayout(const AdminContext& ctx, httplib::Response& res, ShardLayout* layout);

}  // namespace belfry
