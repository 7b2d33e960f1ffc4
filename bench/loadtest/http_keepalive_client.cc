#include "loadtest/http_keepalive_client.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace belfry::loadtest {
namespace {

constexpr int64_t kReopenDelayNs = 100'000'000;  // after a transport error
constexpr int64_t kLateStartNs = 5'000'000;      // rate mode: a start this late counts as late
constexpr size_t kReadBufferBytes = 64 * 1024;
constexpr int64_t kMinRateWaitNs = 200'000;

}  // namespace

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

HttpEndpoint HttpEndpoint::Resolve(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size())
    throw std::invalid_argument("want host:port, got '" + host_port + "'");
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr)
    throw std::runtime_error(fmt::format("cannot resolve {}: {}", host_port, gai_strerror(rc)));
  HttpEndpoint e;
  std::memcpy(&e.address, found->ai_addr, found->ai_addrlen);
  e.address_len = found->ai_addrlen;
  e.host_header = host_port;
  freeaddrinfo(found);
  return e;
}

std::string HttpEndpoint::TryConnect() const {
  const int fd =
      ::socket(reinterpret_cast<const sockaddr*>(&address)->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fmt::format("socket: {}", std::strerror(errno));
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), address_len);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? "" : fmt::format("connect to {}: {}", host_header, std::strerror(err));
}

struct HttpKeepAliveClient::Connection {
  enum class State { kDown, kConnecting, kFree, kBusy };

  uint32_t index = 0;
  uint32_t generation = 0;  // bumped per socket, so stale epoll events of a closed one are ignored
  int fd = -1;
  State state = State::kDown;
  int64_t reopen_at_ns = 0;
  bool want_write = false;
  bool reused = false;  // a response was read on this socket before
  bool has_request = false;
  bool resent = false;  // the request in flight was already re-sent once after an idle close
  std::string out;
  size_t out_sent = 0;
  int64_t intended_ns = 0;
  int64_t sent_ns = 0;
  HttpResponseParser parser;
};

HttpKeepAliveClient::HttpKeepAliveClient(HttpClientOptions options, NextTarget next, OnResult on_result)
    : options_(std::move(options)), next_(std::move(next)), on_result_(std::move(on_result)) {
  if (options_.connections < 1) throw std::invalid_argument("need at least one connection");
  for (int i = 0; i < options_.connections; ++i) {
    connections_.push_back(std::make_unique<Connection>());
    connections_.back()->index = static_cast<uint32_t>(i);
  }
  read_buffer_.resize(kReadBufferBytes);
  if (options_.rate_per_s > 0)
    interval_ns_ = std::max<int64_t>(1, static_cast<int64_t>(1e9 / options_.rate_per_s));
}

HttpKeepAliveClient::~HttpKeepAliveClient() {
  for (auto& c : connections_) {
    if (c->fd >= 0) ::close(c->fd);
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void HttpKeepAliveClient::Close(Connection& c) {
  if (c.fd >= 0) ::close(c.fd);  // also removes it from the epoll set
  c.fd = -1;
  c.want_write = false;
  c.reused = false;
  c.state = Connection::State::kDown;
}

void HttpKeepAliveClient::Open(Connection& c, int64_t now) {
  Close(c);
  ++c.generation;
  const int family = reinterpret_cast<const sockaddr*>(&options_.endpoint.address)->sa_family;
  c.fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  const int one = 1;
  setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = (static_cast<uint64_t>(c.generation) << 32) | c.index;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) != 0)
    throw std::runtime_error(fmt::format("epoll_ctl: {}", std::strerror(errno)));
  c.want_write = true;
  const int rc = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&options_.endpoint.address),
                           options_.endpoint.address_len);
  if (rc == 0) {
    OnConnected(c, now);
  } else if (errno == EINPROGRESS) {
    c.state = Connection::State::kConnecting;
  } else {
    connect_failures_.fetch_add(1, std::memory_order_relaxed);
    Fail(c, fmt::format("connect: {}", std::strerror(errno)), now);
  }
}

void HttpKeepAliveClient::Reopen(Connection& c, int64_t now) {
  if (Sending(now)) {
    Open(c, now);
  } else {
    Close(c);
  }
}

void HttpKeepAliveClient::OnConnected(Connection& c, int64_t now) {
  opened_.fetch_add(1, std::memory_order_relaxed);
  c.state = Connection::State::kFree;
  SetWantWrite(c, false);
  if (c.has_request) {  // a re-send after an idle close
    c.state = Connection::State::kBusy;
    c.out_sent = 0;
    c.parser.Reset();
    Write(c, now);
  } else {
    BecomeFree(c, now);
  }
}

void HttpKeepAliveClient::SetWantWrite(Connection& c, bool want) {
  if (c.want_write == want || c.fd < 0) return;
  epoll_event ev{};
  ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
  ev.data.u64 = (static_cast<uint64_t>(c.generation) << 32) | c.index;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.want_write = want;
}

void HttpKeepAliveClient::BecomeFree(Connection& c, int64_t now) {
  c.state = Connection::State::kFree;
  if (!Sending(now)) {
    // Done with it: close at once, so that a server with a thread per connection can serve the
    // connections still waiting for an answer instead of waiting for this one's next request.
    Close(c);
    return;
  }
  if (interval_ns_ == 0) {
    StartRequest(c, now, now);
  } else if (next_intended_ns_ <= now) {
    const int64_t intended = next_intended_ns_;
    next_intended_ns_ += interval_ns_;
    StartRequest(c, intended, now);
  } else {
    parked_.push_back(c.index);
  }
}

void HttpKeepAliveClient::StartParked(int64_t now) {
  while (!parked_.empty() && next_intended_ns_ <= now) {
    Connection& c = *connections_[parked_.back()];
    parked_.pop_back();
    if (c.state != Connection::State::kFree) continue;
    const int64_t intended = next_intended_ns_;
    next_intended_ns_ += interval_ns_;
    StartRequest(c, intended, now);
  }
}

void HttpKeepAliveClient::StartRequest(Connection& c, int64_t intended_ns, int64_t now) {
  const std::string target = next_(c.index);
  c.out.clear();
  c.out.append("GET ").append(target).append(" HTTP/1.1\r\nHost: ").append(options_.endpoint.host_header);
  c.out.append("\r\n").append(options_.extra_headers).append("\r\n");
  c.out_sent = 0;
  c.has_request = true;
  c.resent = false;
  c.intended_ns = intended_ns;
  c.sent_ns = now;
  c.parser.Reset();
  c.state = Connection::State::kBusy;
  ++in_flight_;
  if (now - intended_ns > kLateStartNs) late_starts_.fetch_add(1, std::memory_order_relaxed);
  Write(c, now);
}

void HttpKeepAliveClient::Write(Connection& c, int64_t now) {
  while (c.out_sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
      bytes_out_.fetch_add(n, std::memory_order_relaxed);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SetWantWrite(c, true);
      return;
    }
    const int err = errno;
    if (c.reused && !c.resent && c.out_sent == 0) {  // the server closed the idle connection
      idle_close_.fetch_add(1, std::memory_order_relaxed);
      c.resent = true;
      Open(c, now);
      return;
    }
    Fail(c, fmt::format("send: {}", std::strerror(err)), now);
    return;
  }
  SetWantWrite(c, false);
}

void HttpKeepAliveClient::Read(Connection& c, int64_t now) {
  while (c.fd >= 0) {
    const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n > 0) {
      bytes_in_.fetch_add(n, std::memory_order_relaxed);
      if (!c.has_request) {
        Fail(c, "bytes received with no request in flight", now);
        return;
      }
      HttpResponseParser::State state = HttpResponseParser::State::kIncomplete;
      const size_t used =
          c.parser.Feed(std::string_view(read_buffer_.data(), static_cast<size_t>(n)), &state);
      if (state == HttpResponseParser::State::kError) {
        Fail(c, c.parser.error(), now);
        return;
      }
      if (state == HttpResponseParser::State::kComplete) {
        const bool close = c.parser.connection_close();
        Finish(c, now);
        if (used < static_cast<size_t>(n)) {
          Fail(c, "bytes after the response (one request was in flight)", now);
        } else if (close) {
          server_close_.fetch_add(1, std::memory_order_relaxed);
          Reopen(c, now);
        } else {
          c.reused = true;
          BecomeFree(c, now);
        }
        return;
      }
      if (static_cast<size_t>(n) < read_buffer_.size()) return;
      continue;
    }
    // End of the connection (n == 0) or an error such as a reset.
    const std::string what =
        n == 0 ? std::string("connection closed") : fmt::format("recv: {}", std::strerror(errno));
    if (!c.has_request) {  // closed while idle: re-open now, so the next request does not pay for it
      idle_close_.fetch_add(1, std::memory_order_relaxed);
      Reopen(c, now);
      return;
    }
    if (c.parser.empty() && c.reused && !c.resent) {
      idle_close_.fetch_add(1, std::memory_order_relaxed);
      c.resent = true;
      Open(c, now);
      return;
    }
    if (n == 0 && c.parser.FinishOnEof() == HttpResponseParser::State::kComplete) {
      Finish(c, now);
      server_close_.fetch_add(1, std::memory_order_relaxed);
      Reopen(c, now);
      return;
    }
    Fail(c, c.parser.error().empty() ? what : c.parser.error(), now);
    return;
  }
}

void HttpKeepAliveClient::Finish(Connection& c, int64_t now) {
  HttpResult r;
  r.ok = true;
  r.response = &c.parser;
  r.intended_ns = c.intended_ns;
  r.sent_ns = c.sent_ns;
  r.done_ns = now;
  c.has_request = false;
  --in_flight_;
  on_result_(c.index, r);
}

void HttpKeepAliveClient::Fail(Connection& c, std::string_view error, int64_t now) {
  const std::string text(error);  // may point into the parser, which Close does not touch
  if (c.has_request) {
    HttpResult r;
    r.error = text;
    r.intended_ns = c.intended_ns;
    r.sent_ns = c.sent_ns;
    r.done_ns = now;
    c.has_request = false;
    --in_flight_;
    on_result_(c.index, r);
  }
  error_reconnects_.fetch_add(1, std::memory_order_relaxed);
  Close(c);
  c.reopen_at_ns = now + kReopenDelayNs;
}

int HttpKeepAliveClient::Wait(epoll_event* events, int max_events, int64_t wait_ns) {
  if (precise_wait_) {
    timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000),
                     static_cast<long>(wait_ns % 1'000'000'000)};
    const int n = epoll_pwait2(epoll_fd_, events, max_events, &timeout, nullptr);
    if (n >= 0 || errno != ENOSYS) return n;
    precise_wait_ = false;  // a kernel before 5.11: millisecond timeouts
  }
  return epoll_wait(epoll_fd_, events, max_events, static_cast<int>((wait_ns + 999'999) / 1'000'000));
}

void HttpKeepAliveClient::Run(int64_t stop_ns, int64_t drain_until_ns, const std::atomic<bool>* abort) {
  stop_ns_ = stop_ns;
  abort_ = abort;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::runtime_error(fmt::format("epoll_create1: {}", std::strerror(errno)));
  int64_t now = MonotonicNs();
  next_intended_ns_ = now;
  for (auto& c : connections_) Open(*c, now);
  std::vector<epoll_event> events(256);
  bool stopped = false;
  while (true) {
    now = MonotonicNs();
    const bool sending = Sending(now);
    if (abort_ != nullptr && abort_->load()) break;
    if (!sending && (in_flight_ == 0 || now >= drain_until_ns)) break;
    if (!sending && !stopped) {
      stopped = true;
      for (auto& c : connections_) {
        if (c->state == Connection::State::kFree) Close(*c);
      }
    }
    int64_t wait_ns = 100'000'000;
    if (sending) {
      StartParked(now);
      // Rate mode: wake for the next intended start, but at most every kMinRateWaitNs, starting
      // whatever fell due meanwhile together.
      if (!parked_.empty()) wait_ns = std::min(wait_ns, std::max(kMinRateWaitNs, next_intended_ns_ - now));
      for (auto& c : connections_) {
        if (c->state != Connection::State::kDown || c->has_request) continue;
        if (c->reopen_at_ns <= now) {
          Open(*c, now);
        } else {
          wait_ns = std::min(wait_ns, c->reopen_at_ns - now);
        }
      }
      wait_ns = std::min(wait_ns, stop_ns_ - now);
    } else {
      wait_ns = std::min(wait_ns, drain_until_ns - now);
    }
    const int n = Wait(events.data(), static_cast<int>(events.size()), std::max<int64_t>(0, wait_ns));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("epoll_wait: {}", std::strerror(errno)));
    }
    now = MonotonicNs();
    for (int i = 0; i < n; ++i) {
      const uint32_t index = static_cast<uint32_t>(events[i].data.u64 & 0xffffffffu);
      const uint32_t generation = static_cast<uint32_t>(events[i].data.u64 >> 32);
      Connection& c = *connections_[index];
      if (c.fd < 0 || c.generation != generation) continue;
      const uint32_t ev = events[i].events;
      if (c.state == Connection::State::kConnecting) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          connect_failures_.fetch_add(1, std::memory_order_relaxed);
          Fail(c, fmt::format("connect: {}", std::strerror(err)), now);
        } else if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
          OnConnected(c, now);
        }
        continue;
      }
      if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) Read(c, now);
      if ((ev & EPOLLOUT) && c.fd >= 0 && c.generation == generation && c.state == Connection::State::kBusy &&
          c.out_sent < c.out.size()) {
        Write(c, now);
      }
    }
  }
  now = MonotonicNs();
  for (auto& c : connections_) {
    if (c->has_request) {
      HttpResult r;
      r.error = "no response before the end of the run";
      r.unanswered_at_end = true;
      r.intended_ns = c->intended_ns;
      r.sent_ns = c->sent_ns;
      r.done_ns = now;
      c->has_request = false;
      --in_flight_;
      on_result_(c->index, r);
    }
    Close(*c);
  }
}

}  // namespace belfry::loadtest
