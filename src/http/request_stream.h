// RequestStream: the httplib::Stream one request of a connection is served through. The request
// head was already read by the ConnectionGate, so reads are served from that buffer first; what
// is still needed (a body) is read from the socket before a deadline for the whole read, and each
// write must complete before a deadline of its own. cpp-httplib's own stream bounds each recv()
// and send() only, so a peer that trickles a byte at a time could hold a worker indefinitely.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

namespace belfry {

class RequestStream final : public httplib::Stream {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // `buffered` holds bytes already read from `fd` (at least the request head). Reads after the
  // buffer fail once `read_deadline` passes; each write() call fails unless it completes within
  // `write_timeout`. Does not own `fd`.
  RequestStream(int fd, std::string peer_ip, int peer_port, std::string buffered, Deadline read_deadline,
                std::chrono::milliseconds write_timeout);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  // The bytes read from the socket but not consumed by the request (a pipelined next request).
  std::string TakeUnread();

 private:
  // poll() for `events` until `deadline`; true iff ready.
  bool WaitFor(short events, Deadline deadline) const;

  const int fd_;
  const std::string peer_ip_;
  const int peer_port_;
  std::string buffer_;
  size_t consumed_ = 0;
  const Deadline read_deadline_;
  const std::chrono::milliseconds write_timeout_;
};

}  // namespace belfry
