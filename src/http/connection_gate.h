// ConnectionGate: reads the request head of every admin connection on one poll() thread, and
// hands a connection to a worker only once its head is complete (docs/operations.md,
// "Connections").
//
// cpp-httplib serves a connection on one thread from accept to close, and bounds each recv() only.
// A client that sends a header line every few seconds thus held a worker without end, and 140 such
// connections took every worker and queue place, so that /healthz timed out on a healthy node
// (issue 33). Here a slow or idle connection holds no thread: it waits in the gate, which
//   - gives the whole head one deadline (head_timeout; then 408 and close), and a kept-alive
//     connection one idle deadline between requests (idle_timeout; then close);
//   - limits the connections open at once, in all and per client address (then 503 + Retry-After
//     at once, and close);
//   - hands each complete head to `dispatch` (the server's lanes), and answers 503 at once when it
//     is refused (every worker busy and the lane's queue full).
// Refused connections are closed after their answer is written and the client's rest is drained
// for up to a second, so the client reads the answer instead of a reset.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace belfry {

struct ConnectionGateOptions {
  std::chrono::milliseconds head_timeout{5000};  // the whole request head, from accept or first byte
  std::chrono::milliseconds idle_timeout{5000};  // a kept-alive connection between requests
  size_t max_head_bytes = 16 * 1024;             // then 431
  size_t max_header_line_bytes = 8192;           // one header line with its CRLF; then 431 (see ClassifyHead)
  size_t max_connections = 1024;                 // open at once, in all
  size_t max_connections_per_client = 32;        // open at once, per client address
  int retry_after_s = 1;
};

// A connection whose request head is complete, on its way to a worker.
struct ReadyConnection {
  int fd = -1;  // owned by the gate: give it back with ConnectionGate::Return
  std::string peer_ip;
  int peer_port = 0;
  std::string buffered;  // the bytes read so far: a complete head, perhaps more
  int32_t served = 0;    // requests this connection has had answered before this one
};

// What the bytes read so far of a connection call for.
enum class HeadState {
  kIncomplete,  // no blank line yet, and within the bounds
  kComplete,    // a whole head within the bounds: dispatch it
  kTooLarge,    // the head is longer than max_head_bytes, or a header line (after the request
                // line, with its CRLF) is longer than max_header_line_bytes: answer 431
};
// cpp-httplib answers a header line longer than its CPPHTTPLIB_HEADER_MAX_LENGTH (8192, with its
// CRLF) with a bare 400; the gate answers 431 first, so that an oversized head gets one answer
// whatever its shape. A complete head is measured up to its blank line, not the bytes after it.
HeadState ClassifyHead(std::string_view buffer, size_t max_head_bytes, size_t max_header_line_bytes);

// The target of a request head's request line ("GET /a?b HTTP/1.1" -> "/a?b"); empty when malformed.
std::string_view RequestTarget(std::string_view head);

// Removes every header line named `name` (any case) from the complete head at the start of
// `buffer` (up to its blank line; the bytes after it are left alone). Nothing when the head is
// not complete. The admin server removes Accept-Encoding: cpp-httplib 0.11 answers a client that
// accepts br with brotli at its default quality, 108 ms for a 36 KB page of jobs that takes 8 ms
// uncompressed (measured, docs/console.md), so every answer goes uncompressed.
void RemoveHeaderLines(std::string* buffer, std::string_view name);

class ConnectionGate final {
 public:
  enum class Refusal { kClientLimit, kConnectionLimit, kBusy, kHeadTimeout, kHeadTooLarge };

  // Called on the gate's thread with each complete head; false = refused (the gate answers 503).
  using Dispatch = std::function<bool(ReadyConnection&&)>;
  // Called on the gate's thread for each connection turned away. May be empty.
  using OnRefused = std::function<void(Refusal)>;

  // Starts the gate's thread. `overloaded_body(why)` is the JSON body of a 503.
  ConnectionGate(ConnectionGateOptions options, Dispatch dispatch, OnRefused on_refused,
                 std::function<std::string(std::string_view why)> overloaded_body);
  // Stop(), then closes every connection still held.
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Takes ownership of an accepted socket. Thread-safe, never blocks on I/O.
  void Admit(int fd);
  // A worker is done with a request of `fd`: keep = wait for the next request (`unread` holds the
  // bytes already read past this request), else close. Thread-safe.
  void Return(int fd, std::string unread, bool keep);
  // Stops the thread; connections stay open until destruction. Idempotent.
  void Stop();

 private:
  using Time = std::chrono::steady_clock::time_point;
  enum class State { kReading, kServing, kLingering };
  struct Conn {
    std::string ip;
    int port = 0;
    std::string buffer;
    State state = State::kReading;
    bool idle = false;  // kept alive between requests, nothing read yet
    Time deadline;
    int32_t served = 0;
  };
  struct Returned {
    int fd;
    std::string unread;
    bool keep;
  };

  void Run();
  void TakeInbox(Time now);
  void OnAdmitted(int fd, Time now);
  void OnReadable(int fd, Conn& c, Time now);
  // Dispatches, refuses or keeps waiting on what the connection has buffered (ClassifyHead).
  void OnBuffered(int fd, Conn& c, Time now);
  void OnReturned(Returned r, Time now);
  // kReading with a complete head: dispatch it, or refuse.
  void MaybeDispatch(int fd, Conn& c, Time now);
  // Writes the refusal's answer, and lingers (or closes, past the lingering bound).
  void Refuse(int fd, Conn& c, Refusal why, Time now);
  void Close(int fd);
  // Stops counting `c` against the limits (it is closing or lingering).
  void Release(Conn& c);
  std::string Answer(Refusal why) const;

  const ConnectionGateOptions options_;
  const Dispatch dispatch_;
  const OnRefused on_refused_;
  const std::function<std::string(std::string_view)> overloaded_body_;
  int wake_fd_ = -1;

  std::mutex mu_;  // guards the inbox
  std::vector<int> admitted_;
  std::vector<Returned> returned_;
  bool stopping_ = false;

  // Owned by the gate's thread.
  std::unordered_map<int, Conn> conns_;
  std::unordered_map<std::string, size_t> per_client_;
  size_t counted_ = 0;    // connections reading or serving (the limits count these)
  size_t lingering_ = 0;  // refused connections draining before close

  std::thread thread_;
};

}  // namespace belfry
