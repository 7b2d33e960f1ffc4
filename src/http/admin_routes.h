// The admin API's route handlers, by resource. Each answers one request on a worker's thread,
// reading through the context (admin_context.h) and writing the view that core/resource_views.h
// names for its resource. The routes, parameters and answers are docs/operations.md's and
// docs/openapi.yaml's; admin_server.cc maps paths to these (and decodes a path's id).
#pragma once

#include <string>
#include <string_view>

#include "belfry/status.h"
#include "http/write_token.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace belfry {

struct AdminContext;

// Probes and metrics (probe_routes.cc): GET /healthz, /readyz, /metrics.
void ServeHealthz(httplib::Response& res);
void ServeReadyz(AdminContext& ctx, httplib::Response& res);
void ServeMetrics(AdminContext& ctx, httplib::Response& res);

// Jobs (job_routes.cc): GET /v1/jobs, /v1/jobs/{id}, /v1/jobs/{id}/next, /v1/jobs/{id}/backfill.
// `id` is the job id from the path, decoded.
void ServeListJobs(AdminContext& ctx, const httplib::Request& req, httplib::Response& res);
void ServeGetJob(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res);
void ServeNext(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res);
void ServeBackfillDryRun(AdminContext& ctx, const std::string& id, const httplib::Request& req,
                         httplib::Response& res);

// A job's execution history (execution_routes.cc): GET /v1/jobs/{id}/executions.
void ServeExecutions(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res);

// A job's audit trail (change_routes.cc): GET /v1/jobs/{id}/changes.
void ServeChanges(AdminContext& ctx, const std::string& id, const httplib::Request& req, httplib::Response& res);

// Shards (shard_routes.cc): GET /v1/shards.
void ServeShards(AdminContext& ctx, httplib::Response& res);

// Load (load_routes.cc): GET /v1/load, /v1/load/rebalance.
void ServeLoad(AdminContext& ctx, const httplib::Request& req, httplib::Response& res);
void ServeRebalance(AdminContext& ctx, const httplib::Request& req, httplib::Response& res);

// Bulk operations (bulk_op_routes.cc): GET /v1/bulk-ops, /v1/bulk-ops/{id}.
void ServeListBulkOps(AdminContext& ctx, const httplib::Request& req, httplib::Response& res);
void ServeGetBulkOp(AdminContext& ctx, const httplib::Request& req, httplib::Response& res);

// The console (console_routes.cc): GET /ui/<name>, "" being index.html, with its security headers.
void ServeConsoleFile(AdminContext& ctx, const std::string& name, httplib::Response& res);

// Commands (command_routes.cc): POST /v1/commands, with a write token.
void ServePostCommand(AdminContext& ctx, const httplib::Request& req, httplib::Response& res);

// The write token's claims when `authorization` (the Authorization header's value) carries a
// valid one for this node; Invalid with the reason to show the caller otherwise.
StatusOr<WriteTokenClaims> AuthorizeWrite(const AdminContext& ctx, std::string_view authorization);

}  // namespace belfry
