// AdmissionQueue: the admin server's connection workers, as an httplib::TaskQueue.
//
// httplib hands every accepted connection to its task queue, and the worker that takes it serves
// that connection's kept-alive requests until the connection closes or idles out. So the worker
// count bounds the connections served at once. httplib's own ThreadPool queues the rest without
// limit: under overload the queue, and every client's wait, grows for ever.
//
// This queue keeps at most `max_queued` connections waiting for a worker. A connection beyond
// that goes to a shedding thread instead; the server sees OnShedThread() there and answers the
// connection's first request 503 with Retry-After and "Connection: close". Overload thus gets a
// fast, explicit answer rather than a wait without bound.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace belfry {

class AdmissionQueue final : public httplib::TaskQueue {
 public:
  // REQUIRES: workers >= 1. `on_shed` (may be empty) is called once per connection turned away,
  // on the accepting thread.
  AdmissionQueue(size_t workers, size_t max_queued, std::function<void()> on_shed);
  ~AdmissionQueue() override;
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

  // True on the shedding thread: the connection being served there is to be turned away.
  static bool OnShedThread();

 private:
  struct Lane {
    std::deque<std::function<void()>> tasks;
    std::condition_variable ready;
  };
  void Work(Lane& lane, bool shedding);

  const size_t max_queued_;
  std::mutex mu_;
  Lane serve_;
  Lane shed_lane_;
  bool stopping_ = false;
  size_t idle_ = 0;  // serving workers waiting for a connection
  const std::function<void()> on_shed_;
  std::vector<std::thread> threads_;
};

}  // namespace belfry
