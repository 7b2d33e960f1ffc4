// WorkerLane: a fixed set of threads that run tasks from a bounded queue. The admin server has two
// (docs/operations.md, "Connections"): one for probes and one for every other request, so that a
// probe never waits behind a data request.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace belfry {

class WorkerLane final {
 public:
  // REQUIRES: threads >= 1. At most `max_queued` tasks wait while every thread is busy.
  WorkerLane(size_t threads, size_t max_queued);
  // Shutdown().
  ~WorkerLane();
  WorkerLane(const WorkerLane&) = delete;
  WorkerLane& operator=(const WorkerLane&) = delete;

  // Queues `task`, or returns false at once when idle threads plus max_queued places are taken
  // (or the lane is shut down). Thread-safe.
  bool TrySubmit(std::function<void()> task);

  // Lets running tasks finish, drops queued ones (destroying them unrun) and joins the threads.
  void Shutdown();

 private:
  void Work();

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  // Threads not running a task, counted from construction: a thread that has not yet reached its
  // first wait is idle too. (Counted only while waiting, a lane of one thread refused the first
  // request sent right after it started: http_test saw it on a loaded machine.)
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace belfry
