// The server: its lifecycle (bind, accept, admit, serve, stop) and its routing. The handlers are
// in the *_routes.cc files (admin_routes.h), who gets in is admin_admission.h, and the error
// answers admin_responses.h.
#include "http/admin_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>
#include <exception>
#include <string_view>
#include <utility>

#include "http/admin_admission.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/connection_gate.h"
#include "http/request_params.h"
#include "http/request_stream.h"
#include "http/worker_lane.h"

namespace belfry {
namespace {

constexpr std::string_view kJobsPrefix = "/v1/jobs/";
constexpr std::string_view kNextSuffix = "/next";
constexpr std::string_view kExecutionsSuffix = "/executions";
constexpr std::string_view kChangesSuffix = "/changes";  // the audit trail (docs/audit-trail.md)
// GET /v1/jobs/{id}/backfill?from&to: a backfill's dry run (docs/manual-fires.md).
constexpr std::string_view kBackfillSuffix = "/backfill";
constexpr std::string_view kBulkOpsPrefix = "/v1/bulk-ops/";

// Threads and queue places of the probe lane (/healthz and /readyz): both answer from memory.
constexpr size_t kProbeThreads = 2;
constexpr size_t kProbeQueue = 64;
// Each write() of a response must complete within this (a client that does not read holds a
// worker this long at most, per write).
constexpr std::chrono::seconds kWriteTimeout{5};

// Set on a worker's thread when httplib answered a request it could not read whole: a request
// line or header line it refused, or a body over the limit. Where that request ends in the stream
// is then unknown, so Serve closes the connection after the answer. Kept alive, the rest of the
// refused request was read as the next one, and the client's next request on the connection got
// a 400 (schemathesis found it: QUERY /v1/shards, then GET /v1/shards).
thread_local bool t_request_left_unread = false;

// The methods httplib parses; it refuses any other in the request line, before the headers.
bool IsHttplibMethod(std::string_view m) {
  return m == "GET" || m == "HEAD" || m == "POST" || m == "PUT" || m == "DELETE" || m == "CONNECT" ||
         m == "OPTIONS" || m == "TRACE" || m == "PATCH" || m == "PRI";
}

// An RFC 9110 token: what a method may be spelt with.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

constexpr std::string_view kCommandsPath = "/v1/commands";

// The methods a known path allows, for 405's Allow header.
const char* AllowedMethods(std::string_view path) { return path == kCommandsPath ? "POST" : "GET, HEAD"; }

bool IsKnownPath(const std::string& path) {
  return path == "/ui" || path.starts_with("/ui/") || path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/v1/jobs" || path == kCommandsPath ||
         path == "/v1/shards" || path == "/v1/load" || path == "/v1/load/rebalance" || path == "/v1/bulk-ops" ||
         (path.size() > kJobsPrefix.size() && path.starts_with(kJobsPrefix)) ||
         (path.size() > kBulkOpsPrefix.size() && path.starts_with(kBulkOpsPrefix));
}

// Removes `suffix` from the end of `raw` when something precedes it.
bool StripSuffix(std::string_view* raw, std::string_view suffix) {
  if (raw->size() <= suffix.size() || !raw->ends_with(suffix)) return false;
  raw->remove_suffix(suffix.size());
  return true;
}

// GET /v1/jobs/{id}[/next|/backfill|/executions|/changes]. Routes on the raw target, so that an id
// containing an encoded '/' ("a%2Fnext") is not taken for the /next sub-resource.
void RouteJobPath(AdminContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::string_view raw = req.target;
  raw = raw.substr(0, raw.find('?'));
  if (!raw.starts_with(kJobsPrefix)) return SendError(res, 404, "no such route: " + req.path);
  raw.remove_prefix(kJobsPrefix.size());
  using Handler = void (*)(AdminContext&, const std::string&, const httplib::Request&, httplib::Response&);
  Handler handler = ServeGetJob;
  if (StripSuffix(&raw, kChangesSuffix)) {
    handler = ServeChanges;
  } else if (StripSuffix(&raw, kBackfillSuffix)) {
    handler = ServeBackfillDryRun;
  } else if (StripSuffix(&raw, kNextSuffix)) {
    handler = ServeNext;
  } else if (StripSuffix(&raw, kExecutionsSuffix)) {
    handler = ServeExecutions;
  }
  std::string id;
  if (std::string e = DecodePathId(raw, "job", &id); !e.empty()) return SendError(res, 400, e);
  handler(ctx, id, req, res);
}

// Runs each task on the caller's thread: httplib's accept loop hands each accepted socket to
// GateServer::process_and_close_socket, which only passes it to the gate.
class InlineTaskQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

}  // namespace

class AdminServer::GateServer final : public httplib::Server {
 public:
  std::function<void(int)> admit;

  // httplib listens with a backlog of 5: a burst of connections (140 at once, in the slow-client
  // attack) overflowed it, and the kernel dropped SYNs, so a probe's connect waited 1 s, 3 s... for
  // a retransmission. listen() again on the bound socket only raises the backlog.
  void RaiseBacklog(int backlog) { ::listen(svr_sock_, backlog); }

  // One request from `strm`: httplib's parsing, routing and response writing.
  bool Serve(httplib::Stream& strm, bool close_connection, bool& connection_closed) {
    return process_request(strm, close_connection, connection_closed, nullptr);
  }

 private:
  // httplib would serve the socket here, on this thread, until the connection closes.
  bool process_and_close_socket(socket_t sock) override {
    admit(sock);
    return true;
  }
};

AdminServer::AdminServer(AdminServerOptions options, AdminDeps deps)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      counters_(std::make_unique<AdmissionCounters>(deps_.metrics->registry())),
      context_(new AdminContext{options_, deps_, *counters_}),
      server_(std::make_unique<GateServer>()) {}

StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(AdminServerOptions options, AdminDeps deps) {
  if (!deps.readers || !deps.metrics || !deps.clock) {
    return Status::Invalid("admin_deps", "AdminServer needs a reader pool, metrics and a clock");
  }
  if (options.worker_threads < 1 || options.max_queued_connections < 0 || options.keep_alive_timeout_s < 1 ||
      options.keep_alive_max_requests < 1 || options.retry_after_s < 1 || options.request_head_timeout_ms < 1 ||
      options.max_connections < 1 || options.max_connections_per_client < 1) {
    return Status::Invalid("admin_limits",
                           "worker_threads, keep_alive_timeout_s, keep_alive_max_requests, retry_after_s, "
                           "request_head_timeout_ms, max_connections and max_connections_per_client must "
                           "be at least 1, max_queued_connections at least 0");
  }
  if (options.max_list_limit < 1) {
    return Status::Invalid("admin_max_list_limit", "max_list_limit must be at least 1");
  }
  if (options.scheduler.tick_ms <= 0 || options.scheduler.shard_count <= 0) {
    return Status::Invalid("admin_scheduler", "scheduler.tick_ms and scheduler.shard_count must be positive");
  }
  StatusOr<ListenAddress> addr = ParseListenAddress(options.listen);
  if (!addr.ok()) return addr.status();
  if (options.token.empty() && !IsLoopbackHost(addr->host)) {
    return Status::Invalid("admin_token_required",
                           "admin.listen \"" + options.listen +
                               "\" is not a loopback address, so the admin API needs a bearer token: set "
                               "admin.token (or BELFRY_ADMIN_TOKEN), or bind to 127.0.0.1");
  }

  std::unique_ptr<AdminServer> s(new AdminServer(std::move(options), std::move(deps)));
  s->host_ = addr->host;
  s->InstallRoutes();
  const AdminServerOptions& o = s->options_;
  s->data_lane_ = std::make_unique<WorkerLane>(static_cast<size_t>(o.worker_threads),
                                               static_cast<size_t>(o.max_queued_connections));
  s->probe_lane_ = std::make_unique<WorkerLane>(kProbeThreads, kProbeQueue);
  ConnectionGateOptions gate;
  gate.head_timeout = std::chrono::milliseconds(o.request_head_timeout_ms);
  gate.idle_timeout = std::chrono::seconds(o.keep_alive_timeout_s);
  gate.max_connections = static_cast<size_t>(o.max_connections);
  gate.max_connections_per_client = static_cast<size_t>(o.max_connections_per_client);
  gate.retry_after_s = o.retry_after_s;
  // The gate answers 431 for a header line cpp-httplib would refuse with a bare 400.
  static_assert(CPPHTTPLIB_HEADER_MAX_LENGTH == 8192, "ConnectionGateOptions::max_header_line_bytes");
  gate.max_header_line_bytes = CPPHTTPLIB_HEADER_MAX_LENGTH;
  AdminServer* self = s.get();
  s->gate_ = std::make_unique<ConnectionGate>(
      gate,
      [self](ReadyConnection&& c) {
        WorkerLane& lane = IsProbePath(RequestTarget(c.buffered)) ? *self->probe_lane_ : *self->data_lane_;
        return lane.TrySubmit([self, c = std::move(c)]() mutable { self->Serve(std::move(c)); });
      },
      [self](ConnectionGate::Refusal why) {
        switch (why) {
          case ConnectionGate::Refusal::kClientLimit:
            return self->counters_->client.Increment();
          case ConnectionGate::Refusal::kConnectionLimit:
          case ConnectionGate::Refusal::kBusy:
            return self->counters_->connections.Increment();
          case ConnectionGate::Refusal::kHeadTimeout:
            return self->counters_->head_timeouts.Increment();
          case ConnectionGate::Refusal::kHeadTooLarge:
            return;
        }
      },
      [self](std::string_view why) {
        const std::string after = std::to_string(self->options_.retry_after_s);
        return ErrorBody("overloaded (" + std::string(why) + "), retry after " + after + " s");
      });
  s->server_->admit = [gate = s->gate_.get()](int fd) { gate->Admit(fd); };
  httplib::Server& svr = *s->server_;
  if (addr->port == 0) {
    s->port_ = svr.bind_to_any_port(addr->host);
    if (s->port_ < 0) s->port_ = 0;
  } else if (svr.bind_to_port(addr->host, addr->port)) {
    s->port_ = addr->port;
  }
  if (s->port_ != 0) s->server_->RaiseBacklog(SOMAXCONN);
  if (s->port_ == 0) {
    return Status::FailedPrecondition("admin HTTP cannot listen on \"" + s->options_.listen +
                                      "\": the address is in use or not available on this host");
  }
  s->thread_ = std::thread([&svr, returned = &s->listen_returned_] {
    svr.listen_after_bind();
    returned->store(true);
  });
  // stop() is a no-op until the accept loop runs, so wait for it before handing out the server;
  // otherwise a quick destruction could hang in join().
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!svr.is_running()) {
    if (s->listen_returned_.load() || std::chrono::steady_clock::now() > deadline) {
      return Status::FailedPrecondition("admin HTTP server did not start within 10 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::debug("admin HTTP listening on {}:{}{}", s->host_, s->port_,
                s->options_.token.empty() ? "" : " (bearer token required)");
  return s;
}

AdminServer::~AdminServer() {
  if (!thread_.joinable()) return;
  // stop() does nothing before the accept loop has started, and must be called only once.
  while (!server_->is_running() && !listen_returned_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (server_->is_running()) server_->stop();
  thread_.join();
  // No more admissions. Stop reading heads, let the requests in progress finish (they give their
  // connections back to the stopped gate), then close every connection.
  gate_->Stop();
  probe_lane_->Shutdown();
  data_lane_->Shutdown();
  gate_.reset();
}

void AdminServer::Serve(ReadyConnection&& c) {
  RemoveHeaderLines(&c.buffered, "Accept-Encoding");  // every answer uncompressed (connection_gate.h)
  RequestStream stream(c.fd, std::move(c.peer_ip), c.peer_port, std::move(c.buffered),
                       std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.request_head_timeout_ms),
                       kWriteTimeout);
  const bool last = c.served + 1 >= options_.keep_alive_max_requests;
  bool closed = false;
  t_request_left_unread = false;
  const bool served = server_->Serve(stream, last, closed);
  const bool keep = served && !closed && !last && !t_request_left_unread;
  gate_->Return(c.fd, stream.TakeUnread(), keep);
}

void AdminServer::InstallRoutes() {
  httplib::Server& svr = *server_;
  svr.new_task_queue = [] { return new InlineTaskQueue; };
  svr.set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
  // httplib's default also sets SO_REUSEPORT, which would let a second process bind the same
  // port and silently receive half of the requests. SO_REUSEADDR alone keeps fast restarts.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // A valid write token admits the reads too (the console holds one token); POST /v1/commands
    // checks its write token itself.
    const std::string authorization = req.get_header_value("Authorization");
    if (RequiresAuth(req.path) && req.path != kCommandsPath && !BearerTokenMatches(authorization, options_.token) &&
        (options_.write_token_secret.empty() || !AuthorizeWrite(*context_, authorization).ok())) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"belfry\"");
      SendError(res, 401, "missing or wrong bearer token: send \"Authorization: Bearer <admin.token>\"");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Called for every response >= 400; fills in JSON only where httplib produced the error.
  svr.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        // httplib's own 400, 413 and 414 may leave part of the request unread: close after them.
        if (res.status == 400 || res.status == 413 || res.status == 414) {
          t_request_left_unread = true;
          res.set_header("Connection", "close");
        }
        // httplib parses TRACE and CONNECT but has no way to route them, and refuses a method it
        // does not know (QUERY, FOO) in the request line; it answers 400 for each. They are methods
        // the API does not allow, like any other but GET and HEAD. An unknown method leaves
        // req.path empty: its path is the target up to any '?'.
        const bool unknown_method = !IsHttplibMethod(req.method) && IsToken(req.method) && !req.target.empty();
        if (res.status == 400 && (req.method == "TRACE" || req.method == "CONNECT" || unknown_method)) {
          const std::string path = unknown_method ? req.target.substr(0, req.target.find('?')) : req.path;
          if (!IsKnownPath(path)) {
            SendError(res, 404, "no such route: " + path);
          } else {
            res.set_header("Allow", AllowedMethods(path));
            SendError(res, 405, "method " + req.method + " is not allowed on " + path);
          }
          return httplib::Server::HandlerResponse::Handled;
        }
        if (res.status == 500) {
          SendInternalError(res, req.method + " " + req.path + ": httplib answered " + std::to_string(res.status));
          return httplib::Server::HandlerResponse::Handled;
        }
        std::string message = DefaultErrorMessage(res.status);
        if (res.status == 404) message += ": " + req.path;
        SendError(res, res.status, message);
        return httplib::Server::HandlerResponse::Handled;
      }));
  svr.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SendInternalError(res, req.method + " " + req.path + " threw: " + what);
  });

  svr.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) { ServeHealthz(res); });
  svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) { ServeReadyz(*context_, res); });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { ServeMetrics(*context_, res); });
  svr.Get("/v1/shards", [this](const httplib::Request&, httplib::Response& res) { ServeShards(*context_, res); });
  svr.Get("/v1/load", [this](const httplib::Request& req, httplib::Response& res) { ServeLoad(*context_, req, res); });
  svr.Get("/v1/load/rebalance",
          [this](const httplib::Request& req, httplib::Response& res) { ServeRebalance(*context_, req, res); });
  svr.Get("/v1/jobs",
          [this](const httplib::Request& req, httplib::Response& res) { ServeListJobs(*context_, req, res); });
  svr.Get("/v1/bulk-ops",
          [this](const httplib::Request& req, httplib::Response& res) { ServeListBulkOps(*context_, req, res); });
  svr.Get(R"(/v1/bulk-ops/[\s\S]+)",
          [this](const httplib::Request& req, httplib::Response& res) { ServeGetBulkOp(*context_, req, res); });
  // [\s\S] rather than '.', which would not match a decoded newline in an id.
  svr.Get(R"(/v1/jobs/[\s\S]+)",
          [this](const httplib::Request& req, httplib::Response& res) { RouteJobPath(*context_, req, res); });

  // The console: /ui redirects to /ui/, whose files are served without the token (they hold no
  // data). [^/]* keeps every file at the top level.
  svr.Get("/ui", [](const httplib::Request&, httplib::Response& res) {
    res.set_redirect("/ui/", 301);
  });
  svr.Get(R"(/ui/([^/]*))", [this](const httplib::Request& req, httplib::Response& res) {
    ServeConsoleFile(*context_, req.matches[1].str(), res);
  });
  svr.Post(std::string(kCommandsPath),
           [this](const httplib::Request& req, httplib::Response& res) { ServePostCommand(*context_, req, res); });

  auto not_allowed = [](const httplib::Request& req, httplib::Response& res) {
    if (!IsKnownPath(req.path)) {
      SendError(res, 404, std::string("no such route: ") + req.path);
      return;
    }
    res.set_header("Allow", AllowedMethods(req.path));
    SendError(res, 405,
              "method " + req.method + " is not allowed on " + req.path +
                  (req.path == kCommandsPath ? std::string(": commands are POSTed")
                                             : std::string(": it is read-only (commands go through the Kafka "
                                                           "commands topic or POST /v1/commands)")));
  };
  svr.Get(std::string(kCommandsPath), not_allowed);
  const std::string any = R"([\s\S]*)";
  svr.Post(any, not_allowed);
  svr.Put(any, not_allowed);
  svr.Patch(any, not_allowed);
  svr.Delete(any, not_allowed);
  svr.Options(any, not_allowed);
}

}  // namespace belfry
