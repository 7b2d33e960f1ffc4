#include "http/request_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace belfry {

RequestStream::RequestStream(int fd, std::string peer_ip, int peer_port, std::string buffered,
                             Deadline read_deadline, std::chrono::milliseconds write_timeout)
    : fd_(fd),
      peer_ip_(std::move(peer_ip)),
      peer_port_(peer_port),
      buffer_(std::move(buffered)),
      read_deadline_(read_deadline),
      write_timeout_(write_timeout) {}

bool RequestStream::WaitFor(short events, Deadline deadline) const {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

bool RequestStream::is_readable() const { return consumed_ < buffer_.size() || WaitFor(POLLIN, read_deadline_); }

bool RequestStream::is_writable() const {
  return WaitFor(POLLOUT, std::chrono::steady_clock::now() + write_timeout_);
}

ssize_t RequestStream::read(char* ptr, size_t size) {
  if (consumed_ < buffer_.size()) {
    const size_t n = std::min(size, buffer_.size() - consumed_);
    std::memcpy(ptr, buffer_.data() + consumed_, n);
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }
  // httplib reads the head a byte at a time; a body comes through here in chunks.
  for (;;) {
    if (!WaitFor(POLLIN, read_deadline_)) return -1;
    const ssize_t n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
  }
}

ssize_t RequestStream::write(const char* ptr, size_t size) {
  const Deadline deadline = std::chrono::steady_clock::now() + write_timeout_;
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    if (!WaitFor(POLLOUT, deadline)) return -1;
  }
  return static_cast<ssize_t>(size);
}

void RequestStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = peer_ip_;
  port = peer_port_;
}

void RequestStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ip.clear();
  port = 0;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

std::string RequestStream::TakeUnread() {
  std::string rest = buffer_.substr(consumed_);
  buffer_.clear();
  consumed_ = 0;
  return rest;
}

}  // namespace belfry
