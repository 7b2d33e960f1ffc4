#include "http/admin_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <limits>
#include <optional>
#include <random>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/bulk_op_json.h"
#include "core/calendar_schedule.h"
#include "core/execution_report.h"
#include "core/fire_limit.h"
#include "core/layout_next_fires.h"
#include "core/iso_time.h"
#include "core/job_change.h"
#include "core/job_json.h"
#include "core/job_labels.h"
#include "core/json_writer.h"
#include "core/load_projection.h"
#include "core/load_rebalance.h"
#include "core/manual_fire.h"
#include "core/message_quote.h"
#include "core/shard_lag.h"
#include "core/slot_math.h"
#include "http/connection_gate.h"
#include "http/request_stream.h"
#include "http/worker_lane.h"

namespace belfry {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kJsonType = "application/json";
constexpr std::string_view kMetricsType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kJobsPrefix = "/v1/jobs/";
constexpr std::string_view kBulkOpsPrefix = "/v1/bulk-ops/";
constexpr int32_t kBulkOpsListLimit = 100;
constexpr std::string_view kNextSuffix = "/next";
constexpr int kNextFiresInJob = 3;  // "nextFires" of the job view (the CLI's `jobs get` shows as many)
constexpr std::string_view kExecutionsSuffix = "/executions";
constexpr std::string_view kChangesSuffix = "/changes";  // the audit trail (docs/audit-trail.md)
// GET /v1/jobs/{id}/backfill?from&to: a backfill's dry run (docs/manual-fires.md).
constexpr std::string_view kBackfillSuffix = "/backfill";
constexpr int32_t kDefaultListLimit = 100;
constexpr int kDefaultNext = 10;
constexpr int kMaxNext = 1000;

template <typename T>
bool RetryableResult(const StatusOr<T>& st) {
  return !st.ok() && st.status().retryable();
}

// fn(session) on a session borrowed from `pool`; nullopt when none freed up within its max_wait.

template <typename Fn>
auto ReadWith(ReaderPool& pool, Fn&& fn) -> std::optional<std::invoke_result_t<Fn, const ReadSession&>> {
  std::optional<ReaderPool::Lease> session = pool.Borrow();
  if (!session) return std::nullopt;
  auto result = fn(**session);
  // A Retryable failure dropped the session's connection, which may have been one to a server
  // that is gone (a standby, with standby.admin_reads): one more try reconnects, to the primary
  // if need be. A read has no effect to repeat.
  if (RetryableResult(result)) result = fn(**session);
  return result;
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(Dump(body), std::string(kJsonType));
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, Json{{"error", message}});
}

// A fresh id for one internal error: 16 hex digits, random, so that ids from different nodes
// and restarts do not collide.
std::string NewErrorId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(rng()));
  return out;
}

// 500: the client learns only an id; the log line with the same id has the text, which may name
// tables, statements or internals that are not the client's business.
void SendInternalError(httplib::Response& res, std::string_view log_text) {
  const std::string id = NewErrorId();
  spdlog::error("admin: internal error error_id={}: {}", id, log_text);
  SendJson(res, 500, Json{{"error", "internal error"}, {"error_id", id}});
}

// A store or ledger failure: Retryable is the database being unreachable (503, try again);
// anything else is a server fault (500, its text logged under an error id).
void SendStoreError(httplib::Response& res, std::string_view what, const Status& st) {
  if (st.retryable()) {
    spdlog::warn("admin: {} unavailable: {}", what, st.ToString());
    SendError(res, 503, std::string(what) + " is unavailable, retry later: " + st.message());
  } else {
    SendInternalError(res, std::string(what) + " failed: " + st.ToString());
  }
}

Json IsoOrNull(const std::optional<EpochMs>& ms) { return ms ? Json(FormatIsoTime(*ms)) : Json(nullptr); }

Json StringOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

// A body that is already JSON text.
void SendJsonText(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(std::move(body), std::string(kJsonType));
}

// Strict percent-decoding of one path segment ('+' stays '+'). nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view in) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = hex(in[i + 1]);
    const int lo = hex(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// Every value of query parameter `name` in the raw request target, percent-decoded ('+' stays
// '+'), nullopt for a malformed escape. httplib's parsed params keep only the text after the last
// '=' of each one, and a label filter's value is itself key=value.
std::optional<std::vector<std::string>> RawQueryValues(std::string_view target, std::string_view name) {
  std::vector<std::string> out;
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return out;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    std::optional<std::string> value = PercentDecode(pair.substr(eq + 1));
    if (!value) return std::nullopt;
    out.push_back(std::move(*value));
  }
  return out;
}

// Text PostgreSQL can compare with stored text: valid UTF-8 without NUL. Ids, owners and topics
// are validated that way at ingestion, so anything else matches nothing, and would make
// PostgreSQL fail the statement (invalid byte sequence) or libpq cut the value at the NUL.
bool IsStorableText(std::string_view s) {
  return s.find('\0') == std::string_view::npos && FirstInvalidUtf8(s) == std::string_view::npos;
}

// Parses a whole decimal integer; nullopt on anything else.
std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// Every query parameter must be one of `allowed`. Returns an error message, or "" when fine.
std::string CheckParams(const httplib::Request& req, std::initializer_list<std::string_view> allowed) {
  for (const auto& [name, value] : req.params) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || name == a;
    if (!ok) {
      std::string expected;
      for (std::string_view a : allowed) expected += (expected.empty() ? "" : ", ") + std::string(a);
      return "unknown query parameter \"" + name + "\" (expected: " + expected + ")";
    }
  }
  return "";
}

// The first value of `name`, or "" when absent. An empty value counts as absent.
std::string Param(const httplib::Request& req, const char* name) {
  auto it = req.params.find(name);
  return it == req.params.end() ? std::string() : it->second;
}

// The id at the end of a route's path (`raw`, still percent-encoded), decoded into *id. Returns an
// error message naming `what` ("the job id in the path is empty"), or "" when *id is usable.
std::string DecodePathId(std::string_view raw, std::string_view what, std::string* id) {
  const std::string prefix = "the " + std::string(what) + " id in the path is ";
  std::optional<std::string> decoded = PercentDecode(raw);
  if (!decoded) return prefix + "not validly percent-encoded";
  if (decoded->empty()) return prefix + "empty";
  if (!IsStorableText(*decoded)) return prefix + "not valid UTF-8 or contains a NUL byte";
  *id = std::move(*decoded);
  return {};
}

// An optional integer query parameter in [lo, hi]; *out is left as it is when the parameter is
// absent or empty. Returns an error message ("<name> must be an integer in lo..hi, got "<text>""),
// or "" when fine.
std::string IntParam(const httplib::Request& req, const char* name, int64_t lo, int64_t hi, int64_t* out) {
  const std::string text = Param(req, name);
  if (text.empty()) return {};
  const std::optional<int64_t> v = ParseInt(text);
  if (!v || *v < lo || *v > hi) {
    return std::string(name) + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
           ", got \"" + text + "\"";
  }
  *out = *v;
  return {};
}

// Compares in time that depends only on the lengths, not on where the first difference is.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(a[i]) ^ y;
  }
  return diff == 0;
}

bool IsKnownPath(const std::string& path) {
  return path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/v1/jobs" ||
         path == "/v1/shards" || path == "/v1/load" || path == "/v1/load/rebalance" || path == "/v1/bulk-ops" ||
         (path.size() > kJobsPrefix.size() && path.starts_with(kJobsPrefix)) ||
         (path.size() > kBulkOpsPrefix.size() && path.starts_with(kBulkOpsPrefix));
}

bool RequiresAuth(const std::string& path) {
  return path == "/metrics" || path == "/v1" || path.starts_with("/v1/");
}

const char* DefaultErrorMessage(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 404:
      return "no such route";
    case 405:
      return "method not allowed";
    case 413:
      return "request too large";
    case 414:
      return "request URI too long";
    default:
      return status >= 500 ? "internal error" : "request failed";
  }
}

}  // namespace

StatusOr<ListenAddress> ParseListenAddress(const std::string& listen) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid("admin_listen", "admin.listen \"" + listen + "\" is invalid: " + why +
                                               " (expected host:port or [ipv6]:port)");
  };
  ListenAddress a;
  std::string_view port_text;
  if (!listen.empty() && listen.front() == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return bad("missing ']:' after the IPv6 address");
    }
    a.host = listen.substr(1, close - 1);
    port_text = std::string_view(listen).substr(close + 2);
  } else {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return bad("missing port");
    a.host = listen.substr(0, colon);
    if (a.host.find(':') != std::string::npos) return bad("an IPv6 address must be written in brackets");
    port_text = std::string_view(listen).substr(colon + 1);
  }
  if (a.host.empty()) return bad("missing host (use 0.0.0.0 for every interface)");
  const std::optional<int64_t> port = ParseInt(port_text);
  if (!port || *port < 0 || *port > 65535) return bad("port must be an integer in 0..65535");
  a.port = static_cast<int>(*port);
  return a;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string Base64UrlEncode(std::string_view data) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(data[i]) << 16) | (static_cast<uint8_t>(data[i + 1]) << 8) |
                       static_cast<uint8_t>(data[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  const size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(data[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    if (rest == 2) out.push_back(kAlphabet[(v >> 6) & 63]);
  }
  return out;
}

std::optional<std::string> Base64UrlDecode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
  };
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // Leftover bits must be zero, so that each byte string has exactly one encoding.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

namespace {

// Threads and queue places of the probe lane (/healthz and /readyz): both answer from memory.
constexpr size_t kProbeThreads = 2;
constexpr size_t kProbeQueue = 64;
// Each write() of a response must complete within this (a client that does not read holds a
// worker this long at most, per write).
constexpr std::chrono::seconds kWriteTimeout{5};

bool IsProbePath(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path == "/healthz" || path == "/readyz";
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

struct AdminServer::Counters {
  explicit Counters(prometheus::Registry& registry)
      : family(prometheus::BuildCounter()
                   .Name("belfry_admin_overload_total")
                   .Help("Admin API requests answered 503 + Retry-After because the node was saturated, by "
                         "reason (sessions: no database session freed up within admin.read_wait; "
                         "connections: every worker was busy and admin.max_queued_connections were waiting, "
                         "or admin.max_connections were open; client: the client's address had "
                         "admin.max_connections_per_client open).")
                   .Register(registry)),
        sessions(family.Add({{"reason", "sessions"}})),
        connections(family.Add({{"reason", "connections"}})),
        client(family.Add({{"reason", "client"}})),
        head_timeouts(prometheus::BuildCounter()
                          .Name("belfry_admin_request_head_timeouts_total")
                          .Help("Admin API connections closed with 408 because the request head did not "
                                "arrive within admin.request_head_timeout.")
                          .Register(registry)
                          .Add({})) {}
  prometheus::Family<prometheus::Counter>& family;
  prometheus::Counter& sessions;
  prometheus::Counter& connections;
  prometheus::Counter& client;
  prometheus::Counter& head_timeouts;
};

AdminServer::AdminServer(AdminServerOptions options, AdminDeps deps)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      counters_(std::make_unique<Counters>(deps_.metrics->registry())),
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
        return Dump(Json{{"error", "overloaded (" + std::string(why) + "), retry after " + after + " s"}});
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
  RequestStream stream(c.fd, std::move(c.peer_ip), c.peer_port, std::move(c.buffered),
                       std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.request_head_timeout_ms),
                       kWriteTimeout);
  const bool last = c.served + 1 >= options_.keep_alive_max_requests;
  bool closed = false;
  const bool served = server_->Serve(stream, last, closed);
  gate_->Return(c.fd, stream.TakeUnread(), served && !closed && !last);
}

bool AdminServer::Authorized(const httplib::Request& req) const {
  if (options_.token.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
  }
  std::string_view presented = std::string_view(header).substr(kScheme.size());
  while (!presented.empty() && presented.front() == ' ') presented.remove_prefix(1);
  while (!presented.empty() && presented.back() == ' ') presented.remove_suffix(1);
  return ConstantTimeEquals(presented, options_.token);
}

void AdminServer::InstallRoutes() {
  httplib::Server& svr = *server_;
  svr.new_task_queue = [] { return new InlineTaskQueue; };
  svr.set_payload_max_length(64 * 1024);
  // httplib's default also sets SO_REUSEPORT, which would let a second process bind the same
  // port and silently receive half of the requests. SO_REUSEADDR alone keeps fast restarts.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (RequiresAuth(req.path) && !Authorized(req)) {
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
        // httplib parses TRACE and CONNECT but has no way to route them, and answers 400: they are
        // methods the API does not allow, like any other but GET and HEAD.
        if (res.status == 400 && (req.method == "TRACE" || req.method == "CONNECT")) {
          if (!IsKnownPath(req.path)) {
            SendJson(res, 404, Json{{"error", "no such route: " + req.path}});
          } else {
            res.set_header("Allow", "GET, HEAD");
            SendJson(res, 405, Json{{"error", "method " + req.method + " is not allowed: the admin API is read-only"}});
          }
          return httplib::Server::HandlerResponse::Handled;
        }
        if (res.status == 500) {
          SendInternalError(res, req.method + " " + req.path + ": httplib answered " + std::to_string(res.status));
          return httplib::Server::HandlerResponse::Handled;
        }
        std::string message = DefaultErrorMessage(res.status);
        if (res.status == 404) message += ": " + req.path;
        SendJson(res, res.status, Json{{"error", message}});
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

  svr.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) { HandleHealthz(res); });
  svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) { HandleReadyz(res); });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { HandleMetrics(res); });
  svr.Get("/v1/shards", [this](const httplib::Request&, httplib::Response& res) { HandleShards(res); });
  svr.Get("/v1/load", [this](const httplib::Request& req, httplib::Response& res) { HandleLoad(req, res); });
  svr.Get("/v1/load/rebalance",
          [this](const httplib::Request& req, httplib::Response& res) { HandleRebalance(req, res); });
  svr.Get("/v1/jobs",
          [this](const httplib::Request& req, httplib::Response& res) { HandleListJobs(req, res); });
  svr.Get("/v1/bulk-ops",
          [this](const httplib::Request& req, httplib::Response& res) { HandleListBulkOps(req, res); });
  svr.Get(R"(/v1/bulk-ops/[\s\S]+)",
          [this](const httplib::Request& req, httplib::Response& res) { HandleGetBulkOp(req, res); });
  // [\s\S] rather than '.', which would not match a decoded newline in an id.
  svr.Get(R"(/v1/jobs/[\s\S]+)",
          [this](const httplib::Request& req, httplib::Response& res) { HandleJobsPath(req, res); });

  auto not_allowed = [](const httplib::Request& req, httplib::Response& res) {
    if (!IsKnownPath(req.path)) {
      SendError(res, 404, std::string("no such route: ") + req.path);
      return;
    }
    res.set_header("Allow", "GET, HEAD");
    SendError(res, 405,
              "method " + req.method +
                  " is not allowed: the admin API is read-only (writes go "
                  "through the Kafka commands topic)");
  };
  const std::string any = R"([\s\S]*)";
  svr.Post(any, not_allowed);
  svr.Put(any, not_allowed);
  svr.Patch(any, not_allowed);
  svr.Delete(any, not_allowed);
  svr.Options(any, not_allowed);
}

void AdminServer::HandleHealthz(httplib::Response& res) { SendJson(res, 200, Json{{"status", "ok"}}); }

void AdminServer::SendSessionsBusy(httplib::Response& res) {
  counters_->sessions.Increment();
  SendOverloaded(res, "every database session is busy");
}

bool AdminServer::ReadLayout(httplib::Response& res, ShardLayout* layout) {
  std::optional<StatusOr<ShardLayout>> read =
      ReadWith(*deps_.readers, [](const ReadSession& s) { return s.ledger->ReadLayout(); });
  if (!read) {
    SendSessionsBusy(res);
    return false;
  }
  if (!read->ok()) {
    SendStoreError(res, "shard ledger", read->status());
    return false;
  }
  *layout = **read;
  return true;
}

void AdminServer::SendOverloaded(httplib::Response& res, const std::string& why) {
  res.set_header("Retry-After", std::to_string(options_.retry_after_s));
  SendError(res, 503, "overloaded (" + why + "), retry after " + std::to_string(options_.retry_after_s) + " s");
}

void AdminServer::HandleReadyz(httplib::Response& res) {
  Status st;
  if (deps_.readiness) {
    try {
      st = deps_.readiness();
    } catch (const std::exception& e) {
      st = Status::Retryable(std::string("readiness check threw: ") + e.what());
    }
  }
  Json body = st.ok() ? Json{{"status", "ready"}} : Json{{"status", "not_ready"}, {"error", st.ToString()}};
  // A warning, not a readiness failure: the node fires every other job.
  if (deps_.unknown_zones) {
    std::vector<std::string> zones = deps_.unknown_zones();
    if (!zones.empty()) body["unknown_zones"] = std::move(zones);
  }
  SendJson(res, st.ok() ? 200 : 503, body);
}

void AdminServer::HandleMetrics(httplib::Response& res) {
  res.set_content(deps_.metrics->Serialize(), std::string(kMetricsType));
  res.status = 200;
}

void AdminServer::HandleJobsPath(const httplib::Request& req, httplib::Response& res) {
  // Route on the raw target, so that an id containing an encoded '/' ("a%2Fnext") is not taken
  // for the /next sub-resource.
  std::string_view raw = req.target;
  raw = raw.substr(0, raw.find('?'));
  if (!raw.starts_with(kJobsPrefix)) {
    SendError(res, 404, "no such route: " + req.path);
    return;
  }
  raw.remove_prefix(kJobsPrefix.size());
  bool next = false;
  bool executions = false;
  bool backfill = false;
  bool changes = false;
  if (raw.size() > kChangesSuffix.size() && raw.ends_with(kChangesSuffix)) {
    changes = true;
    raw.remove_suffix(kChangesSuffix.size());
  } else if (raw.size() > kBackfillSuffix.size() && raw.ends_with(kBackfillSuffix)) {
    backfill = true;
    raw.remove_suffix(kBackfillSuffix.size());
  } else if (raw.size() > kNextSuffix.size() && raw.ends_with(kNextSuffix)) {
    next = true;
    raw.remove_suffix(kNextSuffix.size());
  } else if (raw.size() > kExecutionsSuffix.size() && raw.ends_with(kExecutionsSuffix)) {
    executions = true;
    raw.remove_suffix(kExecutionsSuffix.size());
  }
  std::string id;
  if (std::string e = DecodePathId(raw, "job", &id); !e.empty()) return SendError(res, 400, e);
  if (next) {
    HandleNext(id, req, res);
  } else if (backfill) {
    HandleBackfillDryRun(id, req, res);
  } else if (executions) {
    HandleExecutions(id, req, res);
  } else if (changes) {
    HandleChanges(id, req, res);
  } else {
    if (std::string e = CheckParams(req, {}); !e.empty()) return SendError(res, 400, e);
    HandleGetJob(id, res);
  }
}

void AdminServer::HandleListBulkOps(const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"limit"}); !e.empty()) return SendError(res, 400, e);
  int64_t limit = kBulkOpsListLimit;
  if (std::string e = IntParam(req, "limit", 1, kBulkOpsListLimit, &limit); !e.empty()) return SendError(res, 400, e);
  std::optional<StatusOr<std::vector<BulkOpState>>> read = ReadWith(
      *deps_.readers, [&](const ReadSession& s) { return s.store->ListBulkOps(static_cast<int32_t>(limit)); });
  if (!read) return SendSessionsBusy(res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  std::string body = "{\"bulkOps\":[";
  for (size_t i = 0; i < (*read)->size(); ++i) {
    if (i > 0) body.push_back(',');
    body += EncodeBulkOpJson((**read)[i]);
  }
  body += "]}";
  SendJsonText(res, 200, std::move(body));
}

void AdminServer::HandleGetBulkOp(const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {}); !e.empty()) return SendError(res, 400, e);
  std::string_view raw = req.target;
  raw = raw.substr(0, raw.find('?'));
  raw.remove_prefix(std::min(raw.size(), kBulkOpsPrefix.size()));
  std::string id;
  if (std::string e = DecodePathId(raw, "bulk operation", &id); !e.empty()) return SendError(res, 400, e);
  std::optional<StatusOr<std::optional<BulkOpState>>> read =
      ReadWith(*deps_.readers, [&](const ReadSession& s) { return s.store->GetBulkOp(id); });
  if (!read) return SendSessionsBusy(res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  if (!(*read)->has_value()) return SendError(res, 404, "bulk operation \"" + id + "\" not found");
  SendJsonText(res, 200, EncodeBulkOpJson(***read));
}

void AdminServer::HandleGetJob(const std::string& id, httplib::Response& res) {
  ShardLayout layout;
  if (!ReadLayout(res, &layout)) return;
  std::optional<ReaderPool::Lease> session = deps_.readers->Borrow();
  if (!session) return SendSessionsBusy(res);
  StatusOr<std::optional<JobAndStats>> job = (*session)->store->GetJobAndStats(id);
  if (!job.ok()) return SendStoreError(res, "job store", job.status());
  if (!job->has_value()) return SendError(res, 404, "job \"" + id + "\" not found");
  std::optional<JobStats> stats = std::move((*job)->stats);
  if (!(*job)->stats_read && (*session)->executions != nullptr) {
    StatusOr<std::optional<JobStats>> read = (*session)->executions->GetJobStats(id);
    if (!read.ok()) return SendStoreError(res, "execution store", read.status());
    stats = std::move(*read);
  }
  if (!(*session)->executions) stats.reset();  // a node without history shows no outcomes
  session.reset();
  const StoredJob& stored = (*job)->job;
  const EpochMs now = deps_.clock->NowMs();
  const std::vector<NextFire> fires =
      LayoutNextFires(*deps_.time_zones, stored.spec, stored.paused, layout, now, kNextFiresInJob);
  const std::optional<int64_t> remaining =
      LayoutFiresRemaining(*deps_.time_zones, stored.spec, stored.paused, stored.paused_at, layout, now);
  SendJsonText(res, 200, EncodeJobDetailJson(stored, stats, fires, remaining, (*job)->last_delivery_error));
}

void AdminServer::HandleExecutions(const std::string& id, const httplib::Request& req,
                                   httplib::Response& res) {
  if (std::string e = CheckParams(req, {"limit", "cursor"}); !e.empty()) return SendError(res, 400, e);
  if (!deps_.readers->has_executions())
    return SendError(res, 404, "execution history is not enabled on this node");
  int64_t limit = 50;
  if (std::string e = IntParam(req, "limit", 1, 1000, &limit); !e.empty()) return SendError(res, 400, e);
  std::string cursor;
  if (const std::string text = Param(req, "cursor"); !text.empty()) {
    const std::optional<std::string> decoded = Base64UrlDecode(text);
    if (!decoded || decoded->empty()) {
      return SendError(res, 400,
                       "cursor is not valid: pass back the next_cursor of a previous page unchanged");
    }
    cursor = *decoded;
  }
  std::optional<StatusOr<ExecutionPage>> read =
      ReadWith(*deps_.readers, [&](const ReadSession& s) { return s.executions->ListExecutions(id, static_cast<int32_t>(limit), cursor); });
  if (!read) return SendSessionsBusy(res);
  StatusOr<ExecutionPage>& page = *read;
  if (!page.ok()) {
    if (page.status().code() == Status::Code::kInvalid) {
      return SendError(res, 400,
                       "cursor is not valid: pass back the next_cursor of a previous page unchanged");
    }
    return SendStoreError(res, "execution store", page.status());
  }
  std::string body = "{\"id\":";
  AppendJsonString(&body, id);
  body.append(",\"executions\":[");
  for (size_t i = 0; i < page->records.size(); ++i) {
    if (i > 0) body.push_back(',');
    body.append(EncodeExecutionRecord(page->records[i]));
  }
  body.append("],\"next_cursor\":");
  AppendJsonStringOrNull(&body, Base64UrlEncode(page->next_cursor));
  body.push_back('}');
  SendJsonText(res, 200, std::move(body));
}

void AdminServer::HandleChanges(const std::string& id, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"limit", "cursor"}); !e.empty()) return SendError(res, 400, e);
  int64_t limit = 50;
  if (std::string e = IntParam(req, "limit", 1, 1000, &limit); !e.empty()) return SendError(res, 400, e);
  int64_t before = 0;  // the cursor is the change id the previous page ended at
  if (std::string e = IntParam(req, "cursor", 1, std::numeric_limits<int64_t>::max(), &before); !e.empty()) {
    return SendError(res, 400, "cursor is not valid: pass back the next_cursor of a previous page unchanged");
  }
  std::optional<StatusOr<std::vector<JobChange>>> read = ReadWith(*deps_.readers, [&](const ReadSession& s) {
    return s.store->ListJobChanges(id, before, static_cast<int32_t>(limit));
  });
  if (!read) return SendSessionsBusy(res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  SendJsonText(res, 200, EncodeJobChangePage(id, **read, limit));
}

void AdminServer::HandleBackfillDryRun(const std::string& id, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"from", "to"}); !e.empty()) return SendError(res, 400, e);
  ManualFire fire;
  fire.kind = ManualFire::Kind::kBackfill;
  fire.id = id;
  fire.source.timestamp_ms = deps_.clock->NowMs();
  fire.backfill.dry_run = true;
  for (const char* name : {"from", "to"}) {
    const std::string text = Param(req, name);
    if (text.empty()) return SendError(res, 400, std::string(name) + " is required (ISO-8601)");
    const std::optional<EpochMs> at = ParseIsoTime(text);
    if (!at) return SendError(res, 400, std::string(name) + " is not an ISO-8601 time: \"" + text + "\"");
    (name[0] == 'f' ? fire.backfill.from_ms : fire.backfill.to_ms) = *at;
  }
  if (Status st = CheckBackfillRange(fire.backfill.from_ms, fire.backfill.to_ms, fire.source.timestamp_ms); !st.ok()) {
    return SendError(res, 400, st.message());
  }
  std::optional<StatusOr<ManualFireResult>> read =
      ReadWith(*deps_.readers, [&](const ReadSession& s) { return s.store->CountBackfill(fire); });
  if (!read) return SendSessionsBusy(res);
  StatusOr<ManualFireResult>& counted = *read;
  if (!counted.ok()) {
    if (counted.status().code() == Status::Code::kNotFound) return SendError(res, 404, "job \"" + id + "\" not found");
    return SendStoreError(res, "job store", counted.status());
  }
  if (!counted->status.ok()) return SendError(res, 422, counted->status.message());
  std::string body = "{\"id\":";
  AppendJsonString(&body, id);
  body.append(",\"from\":");
  AppendJsonString(&body, FormatIsoTime(fire.backfill.from_ms));
  body.append(",\"to\":");
  AppendJsonString(&body, FormatIsoTime(fire.backfill.to_ms));
  body.append(",\"slots\":" + std::to_string(counted->slots) + ",\"covered\":" + std::to_string(counted->covered) + "}");
  SendJsonText(res, 200, std::move(body));
}

void AdminServer::HandleNext(const std::string& id, const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"n"}); !e.empty()) return SendError(res, 400, e);
  int64_t n = kDefaultNext;
  if (std::string e = IntParam(req, "n", 1, kMaxNext, &n); !e.empty()) return SendError(res, 400, e);
  ShardLayout layout;
  if (!ReadLayout(res, &layout)) return;
  std::optional<StatusOr<std::optional<StoredJob>>> read =
      ReadWith(*deps_.readers, [&](const ReadSession& s) { return s.store->GetJob(id); });
  if (!read) return SendSessionsBusy(res);
  StatusOr<std::optional<StoredJob>>& job = *read;
  if (!job.ok()) return SendStoreError(res, "job store", job.status());
  if (!job->has_value()) return SendError(res, 404, "job \"" + id + "\" not found");
  const StoredJob& j = **job;
  const std::vector<NextFire> fires =
      LayoutNextFires(*deps_.time_zones, j.spec, j.paused, layout, deps_.clock->NowMs(), static_cast<int>(n));
  Json times = Json::array();
  for (const NextFire& f : fires) times.push_back(FormatIsoTime(f.at));
  Json out{{"id", id}, {"paused", j.paused}, {"next", std::move(times)}, {"fires", Json::parse(EncodeNextFires(fires))}};
  if (j.spec.calendar) {
    out["cron"] = j.spec.calendar->cron;
    out["timeZone"] = j.spec.calendar->time_zone;
  }
  SendJson(res, 200, out);
}

void AdminServer::HandleListJobs(const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"owner", "topic", "limit", "cursor", "label"}); !e.empty()) {
    return SendError(res, 400, e);
  }
  JobListFilter filter;
  // ?label=key=value, repeatable: jobs whose labels contain every one (core/job_labels.h).
  if (req.has_param("label")) {
    const std::optional<std::vector<std::string>> terms = RawQueryValues(req.target, "label");
    if (!terms) return SendError(res, 400, "label has a malformed percent-escape");
    for (const std::string& term : *terms) {
      if (!IsStorableText(term)) return SendError(res, 400, "label is not valid UTF-8 or contains a NUL byte");
    }
    if (Status s = ParseLabelFilter(*terms, &filter.labels); !s.ok()) return SendError(res, 400, s.message());
  }
  filter.owner = Param(req, "owner");
  filter.topic = Param(req, "topic");
  for (const auto& [name, value] : {std::pair<const char*, const std::string&>{"owner", filter.owner},
                                    std::pair<const char*, const std::string&>{"topic", filter.topic}}) {
    if (!IsStorableText(value)) {
      return SendError(res, 400, std::string(name) + " is not valid UTF-8 or contains a NUL byte");
    }
  }
  int64_t limit = std::min(kDefaultListLimit, options_.max_list_limit);
  if (std::string e = IntParam(req, "limit", 1, options_.max_list_limit, &limit); !e.empty()) {
    return SendError(res, 400, e);
  }
  if (const std::string cursor = Param(req, "cursor"); !cursor.empty()) {
    const std::optional<std::string> after = Base64UrlDecode(cursor);
    if (!after || after->empty() || !IsStorableText(*after)) {
      return SendError(res, 400,
                       "cursor is not valid: pass back the next_cursor of a previous page unchanged");
    }
    filter.after_id = *after;
  }
  filter.limit = static_cast<int32_t>(limit);
  std::optional<StatusOr<JobPage>> read =
      ReadWith(*deps_.readers, [&](const ReadSession& s) { return s.store->ListJobs(filter); });
  if (!read) return SendSessionsBusy(res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  const std::vector<StoredJob>& page = (*read)->jobs;
  const std::string next_cursor = (*read)->next_after_id.empty() ? "" : Base64UrlEncode((*read)->next_after_id);
  std::string body = "{\"jobs\":[";
  for (size_t i = 0; i < page.size(); ++i) {
    if (i > 0) body.push_back(',');
    body.append(EncodeJobJson(page[i]));
  }
  body.append("],\"next_cursor\":");
  AppendJsonStringOrNull(&body, next_cursor);
  body.push_back('}');
  SendJsonText(res, 200, std::move(body));
}

// GET /v1/load reads at most this many groups in all (LoadGroupQuery::max_groups; more is a 422),
// and a node runs one projection at a time (another gets 503 + Retry-After): its memory is bounded
// by one request's groups (~100 MB), whatever the number of connection workers (issue 33 §5).
constexpr int64_t kMaxLoadGroups = 500'000;

void AdminServer::HandleLoad(const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"from", "to", "by", "shards", "top"}); !e.empty()) {
    return SendError(res, 400, e);
  }
  ShardLayout layout;
  if (!ReadLayout(res, &layout)) return;
  StatusOr<LoadWindow> window = ParseLoadWindow(Param(req, "from"), Param(req, "to"), deps_.clock->NowMs(), layout,
                                                options_.scheduler.intervals);
  if (!window.ok()) return SendError(res, 400, window.status().message());
  LoadGroupQuery query{window->first_minute, window->last_minute, Param(req, "by")};
  // A breakdown can have a group per job; inside a serving node, read at most this many (~100 MB).
  query.max_groups = kMaxLoadGroups;
  if (!query.by.empty() && query.by != "owner" && query.by != "topic") {
    return SendError(res, 400, "by must be owner or topic, got \"" + query.by + "\"");
  }
  const std::string shards = Param(req, "shards");
  if (!shards.empty() && shards != "true" && shards != "false") {
    return SendError(res, 400, "shards must be true or false, got \"" + shards + "\"");
  }
  int64_t top = 20;
  if (std::string e = IntParam(req, "top", 1, 1000, &top); !e.empty()) return SendError(res, 400, e);
  if (loads_in_flight_.fetch_add(1) > 0) {
    loads_in_flight_.fetch_sub(1);
    return SendOverloaded(res, "another load projection is running");
  }
  struct Done {
    std::atomic<int>& n;
    ~Done() { n.fetch_sub(1); }
  } done{loads_in_flight_};
  std::optional<StatusOr<LoadGroups>> read =
      ReadWith(*deps_.readers, [&](const ReadSession& s) { return s.store->ReadLoadGroups(query); });
  if (!read) return SendSessionsBusy(res);
  if (!read->ok()) {
    if (read->status().reason() == "too_many_groups") return SendError(res, 422, read->status().message());
    return SendStoreError(res, "job store", read->status());
  }
  const LoadProjection p = ProjectLoad(*deps_.time_zones, *window, **read);
  SendJsonText(res, 200, EncodeLoadProjectionJson(p, query.by, shards == "true", static_cast<int>(top)));
}

void AdminServer::HandleRebalance(const httplib::Request& req, httplib::Response& res) {
  if (std::string e = CheckParams(req, {"ids"}); !e.empty()) return SendError(res, 400, e);
  int64_t ids = 5;
  if (std::string e = IntParam(req, "ids", 0, 100, &ids); !e.empty()) return SendError(res, 400, e);
  std::optional<StatusOr<RebalancePlan>> read = ReadWith(
      *deps_.readers, [&](const ReadSession& s) { return ProposeRebalance(*s.store, static_cast<int32_t>(ids)); });
  if (!read) return SendSessionsBusy(res);
  if (!read->ok()) return SendStoreError(res, "job store", read->status());
  SendJsonText(res, 200, EncodeRebalancePlanJson(**read));
}

void AdminServer::HandleShards(httplib::Response& res) {
  ShardLayout layout;
  if (!ReadLayout(res, &layout)) return;
  std::optional<StatusOr<std::vector<ShardState>>> read =
      ReadWith(*deps_.readers, [&](const ReadSession& s) { return s.ledger->LoadStates(); });
  if (!read) return SendSessionsBusy(res);
  StatusOr<std::vector<ShardState>>& states = *read;
  if (!states.ok()) return SendStoreError(res, "shard ledger", states.status());
  const EpochMs now = deps_.clock->NowMs();
  Json shards = Json::array();
  for (const ShardState& s : *states) {
    const ShardLag lag = ComputeShardLag(s, now, layout);
    shards.push_back(Json{
        {"shard", s.shard},
        {"fired_through",
         s.fired_through ? Json(FormatIsoTime(*s.fired_through * kMsPerMinute)) : Json(nullptr)},
        {"fired_through_minute", s.fired_through ? Json(*s.fired_through) : Json(nullptr)},
        {"claim_node", StringOrNull(s.claim_node)},
        {"claim_until", IsoOrNull(s.claim_until)},
        {"claim_live", s.claim_live},
        {"behind_minutes", lag.behind_minutes ? Json(*lag.behind_minutes) : Json(nullptr)},
        {"lag_seconds", lag.lag_seconds ? Json(*lag.lag_seconds) : Json(nullptr)},
        {"debt_minutes", s.debt_minutes},
        {"debt_first_minute", s.debt_first ? Json(*s.debt_first) : Json(nullptr)},
        {"debt_node", StringOrNull(s.debt_node)},
        {"debt_live", s.debt_live},
    });
  }
  SendJson(res, 200, Json{{"now", FormatIsoTime(now)}, {"shards", std::move(shards)}});
}

}  // namespace belfry
