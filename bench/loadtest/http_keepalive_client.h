// HttpKeepAliveClient: drives N HTTP/1.1 keep-alive connections to one server from one thread,
// over non-blocking sockets and epoll, the way a pool of real API clients does: one request in
// flight per connection, the next sent as soon as the previous response is complete (no
// pipelining), each connection reused for many requests. TCP_NODELAY is set on every socket.
//
// Closed loop by default; with a rate, requests start at fixed intended times (rate/s over the
// whole client) on whichever connection is free, and a request's latency should be counted from
// its intended time, so that a slow server is not hidden by the generator waiting for it.
//
// Reconnects: a response with "Connection: close" (or a body ended by the close) is delivered,
// then the connection is re-opened (counted as server_close). A kept-alive connection that the
// server closed while it was idle (EOF or reset before the first byte of the response) gets the
// same request again on a new connection, once (counted as idle_close); real clients retry an
// idempotent GET the same way. Anything else (a malformed response, a close inside one, a
// refused connection) is delivered as a transport error and the connection is re-opened after
// 100 ms (counted as error).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loadtest/http_response_parser.h"

struct epoll_event;

namespace belfry::loadtest {

// A resolved server address. Throws std::invalid_argument / std::runtime_error.
struct HttpEndpoint {
  sockaddr_storage address{};
  socklen_t address_len = 0;
  std::string host_header;  // "host:port"

  // "host:port" (IPv4, IPv6 in brackets, or a name).
  static HttpEndpoint Resolve(const std::string& host_port);
  // Opens and closes one blocking connection: "" if it connected, else why not.
  std::string TryConnect() const;
};

// One finished request, as handed to the completion callback.
struct HttpResult {
  bool ok = false;                               // a whole response was read
  const HttpResponseParser* response = nullptr;  // when ok: status, body, headers
  std::string_view error;                        // when !ok: what went wrong
  bool unanswered_at_end = false;                // !ok because the run ended first
  int64_t intended_ns = 0;                       // when it should have started (= sent_ns in a closed loop)
  int64_t sent_ns = 0;                           // when its first byte was written
  int64_t done_ns = 0;                           // when its last byte was read (or the error seen)
};

struct HttpClientOptions {
  HttpEndpoint endpoint;
  int connections = 1;
  double rate_per_s = 0;      // 0: closed loop
  std::string extra_headers;  // whole header lines, each ended by CRLF (e.g. Authorization)
};

class HttpKeepAliveClient final {
 public:
  // Returns the request target (path and query) for connection `connection`'s next request.
  using NextTarget = std::function<std::string(uint32_t connection)>;
  // Called once per request, with the connection that sent it, on the client's thread.
  using OnResult = std::function<void(uint32_t connection, const HttpResult& result)>;

  HttpKeepAliveClient(HttpClientOptions options, NextTarget next, OnResult on_result);
  // Closes every socket.
  ~HttpKeepAliveClient();
  HttpKeepAliveClient(const HttpKeepAliveClient&) = delete;
  HttpKeepAliveClient& operator=(const HttpKeepAliveClient&) = delete;

  // Runs the loop on the calling thread: starts requests until the monotonic time `stop_ns`
  // (CLOCK_MONOTONIC, as MonotonicNs()), then waits for those in flight until `drain_until_ns`,
  // or until *abort becomes true. Requests still unanswered then are delivered as errors
  // ("no response before the end of the run"). Call once.
  void Run(int64_t stop_ns, int64_t drain_until_ns, const std::atomic<bool>* abort);

  // Thread-safe counters (relaxed).
  int64_t reconnects_server_close() const { return server_close_.load(std::memory_order_relaxed); }
  int64_t reconnects_idle_close() const { return idle_close_.load(std::memory_order_relaxed); }
  int64_t reconnects_error() const { return error_reconnects_.load(std::memory_order_relaxed); }
  int64_t connect_failures() const { return connect_failures_.load(std::memory_order_relaxed); }
  int64_t bytes_in() const { return bytes_in_.load(std::memory_order_relaxed); }
  int64_t bytes_out() const { return bytes_out_.load(std::memory_order_relaxed); }
  int64_t connections_opened() const { return opened_.load(std::memory_order_relaxed); }
  // Rate mode: requests that started more than 5 ms after their intended time (no connection
  // was free, or the client thread was not scheduled).
  int64_t late_starts() const { return late_starts_.load(std::memory_order_relaxed); }

 private:
  struct Connection;

  void Open(Connection& c, int64_t now);
  void Close(Connection& c);
  // A new connection in c's place while the run is sending; otherwise c stays closed.
  void Reopen(Connection& c, int64_t now);
  void StartRequest(Connection& c, int64_t intended_ns, int64_t now);
  void Write(Connection& c, int64_t now);
  void Read(Connection& c, int64_t now);
  void OnConnected(Connection& c, int64_t now);
  // The connection became free (connected, nothing in flight): start its next request or park it.
  void BecomeFree(Connection& c, int64_t now);
  // Delivers a transport error for the request in flight (if any), then reconnects later.
  void Fail(Connection& c, std::string_view error, int64_t now);
  void Finish(Connection& c, int64_t now);
  void SetWantWrite(Connection& c, bool want);
  void StartParked(int64_t now);
  // epoll_wait with a nanosecond timeout (epoll_pwait2 where the kernel has it).
  int Wait(epoll_event* events, int max_events, int64_t wait_ns);
  bool Sending(int64_t now) const { return now < stop_ns_ && !(abort_ != nullptr && abort_->load()); }

  const HttpClientOptions options_;
  const NextTarget next_;
  const OnResult on_result_;
  int epoll_fd_ = -1;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<uint32_t> parked_;  // free connections waiting for the next intended start
  std::string read_buffer_;
  int64_t stop_ns_ = 0;
  const std::atomic<bool>* abort_ = nullptr;
  int64_t interval_ns_ = 0;  // rate mode: between intended starts
  int64_t next_intended_ns_ = 0;
  int in_flight_ = 0;
  bool precise_wait_ = true;

  std::atomic<int64_t> server_close_{0};
  std::atomic<int64_t> idle_close_{0};
  std::atomic<int64_t> error_reconnects_{0};
  std::atomic<int64_t> connect_failures_{0};
  std::atomic<int64_t> bytes_in_{0};
  std::atomic<int64_t> bytes_out_{0};
  std::atomic<int64_t> opened_{0};
  std::atomic<int64_t> late_starts_{0};
};

// CLOCK_MONOTONIC in nanoseconds (the clock Run's deadlines and HttpResult's times are on).
int64_t MonotonicNs();

}  // namespace belfry::loadtest
