// AdminServer: belfry's admin HTTP API (health, readiness, Prometheus metrics, jobs and shards,
// and POST /v1/commands). Writes still go through Kafka: POST /v1/commands publishes the command
// to the commands topic and waits for its outcome (docs/console.md). Routes, formats and the auth
// rule are documented in docs/operations.md.
//
// Auth rule: a listen address that is not loopback (127.0.0.0/8, ::1, localhost) requires a
// token; with a token set, /metrics and every /v1 route require "Authorization: Bearer <token>"
// (the read token, or a valid write token). POST /v1/commands always requires a valid write
// token. /healthz and /readyz are always open.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "belfry/clock.h"
#include "belfry/command_submitter.h"
#include "belfry/config.h"
#include "belfry/execution.h"
#include "belfry/shard_ledger.h"
#include "belfry/status.h"
#include "core/base64url.h"       // Base64UrlEncode, Base64UrlDecode (the page cursors)
#include "http/listen_address.h"  // ParseListenAddress, IsLoopbackHost
#include "http/metrics_registry.h"
#include "http/reader_pool.h"
#include "tzdb/system_time_zone_database.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace belfry {

class ConnectionGate;
class WorkerLane;
struct AdminContext;
struct AdmissionCounters;
struct ReadyConnection;

struct AdminServerOptions {
  // "host:port" or "[v6-host]:port". Port 0 picks an ephemeral port (see AdminServer::port()).
  std::string listen = "127.0.0.1:8080";
  std::string token;  // empty = no auth; only allowed on a loopback address
  // POST /v1/commands (docs/console.md): the HMAC key of the write tokens (http/write_token.h);
  // empty = writes are off (403). A valid write token also admits the read routes.
  std::string write_token_secret;
  int64_t command_wait_ms = 10'000;  // how long a command's request waits for its outcome by default
  int64_t max_body_bytes = 64 * 1024;  // a request body's limit (413 beyond): the largest command
  // The console's files (GET /ui/): empty = the copies compiled in; else read from this directory
  // at each request (http/console_assets.h).
  std::string console_dir;
  // intervals for /v1/load (slots, shards and ticks come from the database's layout record).
  SchedulerConfig scheduler;
  int32_t max_list_limit = 1000;  // largest accepted ?limit= of /v1/jobs
  // GET /v1/load reads at most this many groups in all (LoadGroupQuery::max_groups; more is a
  // 422), and a node runs one projection at a time (another gets 503 + Retry-After): its memory is
  // bounded by one request's groups, whatever the number of connection workers (issue 33 §5).
  int64_t load_max_groups = 1'000'000;
  // Requests served at once, besides probes (/healthz, /readyz), which have two threads of their
  // own. A connection holds a worker only while its request is served: the ConnectionGate reads
  // request heads, and keeps connections between requests, without a thread.
  int32_t worker_threads = 64;
  // Requests with a complete head that may wait for a worker; beyond this, 503 + Retry-After at
  // once, and the connection is closed.
  int32_t max_queued_connections = 64;
  // The whole request head must arrive within this, from accept (or, on a kept-alive connection,
  // from its first byte); then 408 and close.
  int64_t request_head_timeout_ms = 5000;
  int32_t max_connections = 1024;            // open at once; then 503 at once and close
  int32_t max_connections_per_client = 32;   // open at once from one client address; then the same
  int32_t keep_alive_timeout_s = 5;
  int32_t keep_alive_max_requests = 10000;  // then the server closes the connection (nginx: 1000)
  int32_t retry_after_s = 1;                // the Retry-After of every 503 the server sheds
};

// REQUIRES: every pointer is non-null and outlives the server; `metrics` and `clock` must be
// thread-safe.
struct AdminDeps {
  // The database sessions that requests read through, one request per session at a time. A
  // request that cannot borrow one within the pool's max_wait gets 503 + Retry-After. When the
  // sessions have no ExecutionStore, /v1/jobs/{id}/executions answers 404 and jobs show no last
  // outcome.
  ReaderPool* readers = nullptr;
  MetricsRegistry* metrics = nullptr;
  Clock* clock = nullptr;
  // Calendar jobs' zones, for next fires, fire limits and load projections.
  const TimeZoneDatabase* time_zones = &SystemTimeZones();
  // Ok = ready. Called on the request thread for every /readyz; null = always ready.
  std::function<Status()> readiness;
  // Time zones whose calendar jobs this node's ticks skipped (UnknownZoneSkips::zones): /readyz
  // lists them as "unknown_zones" when there are any, without failing. Null = none.
  std::function<std::vector<std::string>()> unknown_zones;
  std::string node_id;
  std::string version;
  // Publishes the commands of POST /v1/commands; null = writes are off (403).
  CommandSubmitter* commands = nullptr;
};

// The longest ?wait_ms= of POST /v1/commands: a request holds a worker while it waits.
inline constexpr int64_t kMaxCommandWaitMs = 60'000;

class AdminServer final {
 public:
  // Binds the listen address and starts serving on a background thread. Returns Invalid when
  // the listen address is malformed, when a token is missing for a non-loopback address, or when
  // a dependency is null; FailedPrecondition when the address cannot be bound.
  static StatusOr<std::unique_ptr<AdminServer>> Start(AdminServerOptions options, AdminDeps deps);

  // Stops accepting, waits for requests in flight and joins the thread.
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // The bound port (the ephemeral one when listen asked for port 0).
  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  AdminServer(AdminServerOptions options, AdminDeps deps);

  class GateServer;  // httplib::Server whose accepted sockets go to the gate

  // Maps paths to the handlers of admin_routes.h, and installs the auth check and the JSON error
  // answers.
  void InstallRoutes();
  // Serves one request of a connection whose head is complete (on a lane's thread), then gives
  // the connection back to the gate.
  void Serve(ReadyConnection&& c);

  const AdminServerOptions options_;
  const AdminDeps deps_;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<AdmissionCounters> counters_;  // belfry_admin_* metrics
  std::unique_ptr<AdminContext> context_;        // what the route handlers share
  std::unique_ptr<GateServer> server_;
  std::unique_ptr<WorkerLane> data_lane_;
  std::unique_ptr<WorkerLane> probe_lane_;
  std::unique_ptr<ConnectionGate> gate_;
  std::atomic<bool> listen_returned_{false};  // set by thread_ when the accept loop ends
  std::thread thread_;
};

}  // namespace belfry
