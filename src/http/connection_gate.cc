#include "http/connection_gate.h"

#include <cctype>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <utility>

namespace belfry {
namespace {

constexpr std::chrono::milliseconds kLinger{1000};
constexpr size_t kReadChunk = 4096;


void PeerAddress(int fd, std::string* ip, int* port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    *port = ntohs(a->sin6_port);
  }
  *ip = text;
}

std::string RawResponse(int status, std::string_view reason, const std::string& body, int retry_after_s) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
                    "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n";
  if (retry_after_s > 0) out += "Retry-After: " + std::to_string(retry_after_s) + "\r\n";
  out += "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return out;
}

}  // namespace

HeadState ClassifyHead(std::string_view buffer, size_t max_head_bytes, size_t max_header_line_bytes) {
  const size_t blank = buffer.find("\r\n\r\n");
  const std::string_view head = blank == std::string_view::npos ? buffer : buffer.substr(0, blank + 4);
  if (head.size() > max_head_bytes) return HeadState::kTooLarge;
  // Each header line, from after the request line's CRLF; an unfinished last line counts as it is.
  for (size_t start = head.find("\r\n"); start != std::string_view::npos;) {
    start += 2;
    const size_t end = head.find("\r\n", start);
    const size_t with_crlf = (end == std::string_view::npos ? head.size() - start : end - start) + 2;
    if (with_crlf > max_header_line_bytes) return HeadState::kTooLarge;
    start = end;
  }
  return blank == std::string_view::npos ? HeadState::kIncomplete : HeadState::kComplete;
}

std::string_view RequestTarget(std::string_view head) {
  const size_t sp = head.find(' ');
  if (sp == std::string_view::npos) return {};
  const size_t end = head.find_first_of(" \r\n", sp + 1);
  if (end == std::string_view::npos) return {};
  return head.substr(sp + 1, end - sp - 1);
}

void RemoveHeaderLines(std::string* buffer, std::string_view name) {
  size_t end = buffer->find("\r\n\r\n");
  if (end == std::string::npos) return;
  size_t pos = buffer->find("\r\n");  // the request line's end
  while (pos < end) {
    const size_t line = pos + 2;
    const size_t next = buffer->find("\r\n", line);  // at most `end`: the last line's CRLF
    const bool named = next - line > name.size() && (*buffer)[line + name.size()] == ':' &&
                       std::equal(name.begin(), name.end(), buffer->begin() + static_cast<std::ptrdiff_t>(line),
                                  [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) ==
                                                              std::tolower(static_cast<unsigned char>(b)); });
    if (named) {
      buffer->erase(pos, next - pos);  // "\r\n<the line>": pos is now the next line's start's CRLF
      end -= next - pos;
      continue;
    }
    pos = next;
  }
}

ConnectionGate::ConnectionGate(ConnectionGateOptions options, Dispatch dispatch, OnRefused on_refused,
                               std::function<std::string(std::string_view why)> overloaded_body)
    : options_(options),
      dispatch_(std::move(dispatch)),
      on_refused_(std::move(on_refused)),
      overloaded_body_(std::move(overloaded_body)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  thread_ = std::thread([this] { Run(); });
}

ConnectionGate::~ConnectionGate() {
  Stop();
  for (const auto& [fd, c] : conns_) ::close(fd);
  for (int fd : admitted_) ::close(fd);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ConnectionGate::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

void ConnectionGate::Admit(int fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    admitted_.push_back(fd);
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void ConnectionGate::Return(int fd, std::string unread, bool keep) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    returned_.push_back(Returned{fd, std::move(unread), keep});
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void ConnectionGate::Run() {
  std::vector<pollfd> fds;
  std::vector<int> expired;
  for (;;) {
    Time now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    TakeInbox(now);
    fds.clear();
    fds.push_back(pollfd{wake_fd_, POLLIN, 0});
    Time next = now + std::chrono::seconds(60);
    for (const auto& [fd, c] : conns_) {
      if (c.state == State::kServing) continue;
      fds.push_back(pollfd{fd, POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now);
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait.count())));
    now = std::chrono::steady_clock::now();
    if (n > 0) {
      if (fds[0].revents != 0) {
        uint64_t count = 0;
        (void)!::read(wake_fd_, &count, sizeof(count));
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = conns_.find(fds[i].fd);
        if (it != conns_.end()) OnReadable(fds[i].fd, it->second, now);
      }
    }
    expired.clear();
    for (const auto& [fd, c] : conns_) {
      if (c.state != State::kServing && c.deadline <= now) expired.push_back(fd);
    }
    for (int fd : expired) {
      Conn& c = conns_.at(fd);
      if (c.state == State::kReading && !c.idle) {
        Refuse(fd, c, Refusal::kHeadTimeout, now);
      } else {
        Close(fd);  // an idle kept-alive connection, or a refused one done lingering
      }
    }
  }
}

void ConnectionGate::TakeInbox(Time now) {
  std::vector<int> admitted;
  std::vector<Returned> returned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    admitted.swap(admitted_);
    returned.swap(returned_);
  }
  for (Returned& r : returned) OnReturned(std::move(r), now);
  for (int fd : admitted) OnAdmitted(fd, now);
}

void ConnectionGate::OnAdmitted(int fd, Time now) {
  // A response is written as headers, then body: without TCP_NODELAY, Nagle's algorithm holds the
  // body until the client's delayed ACK, ~40 ms on each kept-alive request after the first.
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  Conn c;
  PeerAddress(fd, &c.ip, &c.port);
  c.deadline = now + options_.head_timeout;
  Conn& conn = conns_.emplace(fd, std::move(c)).first->second;
  size_t& from_client = per_client_[conn.ip];
  ++counted_;
  ++from_client;
  if (from_client > options_.max_connections_per_client) return Refuse(fd, conn, Refusal::kClientLimit, now);
  if (counted_ > options_.max_connections) return Refuse(fd, conn, Refusal::kConnectionLimit, now);
}

void ConnectionGate::OnReadable(int fd, Conn& c, Time now) {
  char chunk[kReadChunk];
  if (c.state == State::kLingering) {
    for (;;) {
      const ssize_t n = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      return Close(fd);  // the client closed too, or the connection failed
    }
  }
  const ssize_t n = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) return Close(fd);
  if (c.idle) {
    c.idle = false;  // the next request's head starts: it has head_timeout from now
    c.deadline = now + options_.head_timeout;
  }
  c.buffer.append(chunk, static_cast<size_t>(n));
  OnBuffered(fd, c, now);
}

void ConnectionGate::OnBuffered(int fd, Conn& c, Time now) {
  switch (ClassifyHead(c.buffer, options_.max_head_bytes, options_.max_header_line_bytes)) {
    case HeadState::kIncomplete:
      return;
    case HeadState::kComplete:
      return MaybeDispatch(fd, c, now);
    case HeadState::kTooLarge:
      return Refuse(fd, c, Refusal::kHeadTooLarge, now);
  }
}

void ConnectionGate::OnReturned(Returned r, Time now) {
  auto it = conns_.find(r.fd);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  if (!r.keep) return Close(r.fd);
  ++c.served;
  c.state = State::kReading;
  c.buffer = std::move(r.unread);
  c.idle = c.buffer.empty();
  c.deadline = now + (c.idle ? options_.idle_timeout : options_.head_timeout);
  if (!c.idle) OnBuffered(r.fd, c, now);
}

void ConnectionGate::MaybeDispatch(int fd, Conn& c, Time now) {
  ReadyConnection ready{fd, c.ip, c.port, std::move(c.buffer), c.served};
  c.buffer.clear();
  c.state = State::kServing;
  if (!dispatch_(std::move(ready))) Refuse(fd, c, Refusal::kBusy, now);
}

std::string ConnectionGate::Answer(Refusal why) const {
  switch (why) {
    case Refusal::kClientLimit:
      return RawResponse(503, "Service Unavailable",
                         overloaded_body_("this client has " + std::to_string(options_.max_connections_per_client) +
                                          " connections open, the most one client may"),
                         options_.retry_after_s);
    case Refusal::kConnectionLimit:
      return RawResponse(503, "Service Unavailable",
                         overloaded_body_(std::to_string(options_.max_connections) + " connections are open"),
                         options_.retry_after_s);
    case Refusal::kBusy:
      return RawResponse(503, "Service Unavailable", overloaded_body_("every connection worker is busy"),
                         options_.retry_after_s);
    case Refusal::kHeadTimeout:
      return RawResponse(408, "Request Timeout",
                         "{\"error\":\"the request head did not arrive within " +
                             std::to_string(options_.head_timeout.count()) + " ms\"}",
                         0);
    case Refusal::kHeadTooLarge:
      return RawResponse(431, "Request Header Fields Too Large",
                         "{\"error\":\"the request head is larger than " + std::to_string(options_.max_head_bytes) +
                             " bytes\"}",
                         0);
  }
  return {};
}

void ConnectionGate::Refuse(int fd, Conn& c, Refusal why, Time now) {
  if (on_refused_) on_refused_(why);
  const std::string answer = Answer(why);
  // A fresh socket's send buffer holds far more than an answer this small; a peer that does not
  // read loses the answer, not a thread.
  (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  Release(c);
  c.state = State::kLingering;
  ++lingering_;
  if (lingering_ > options_.max_connections) return Close(fd);
  c.buffer.clear();
  c.deadline = now + kLinger;
}

void ConnectionGate::Release(Conn& c) {
  if (c.state == State::kLingering) return;
  --counted_;
  auto it = per_client_.find(c.ip);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

void ConnectionGate::Close(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (it->second.state == State::kLingering) {
    --lingering_;
  } else {
    Release(it->second);
  }
  conns_.erase(it);
  ::close(fd);
}

}  // namespace belfry
