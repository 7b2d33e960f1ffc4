#include "http/worker_lane.h"

#include <utility>

namespace belfry {

WorkerLane::WorkerLane(size_t threads, size_t max_queued) : max_queued_(max_queued), idle_(threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkerLane::~WorkerLane() { Shutdown(); }

bool WorkerLane::TrySubmit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Idle threads take queued tasks at once; only the rest wait.
    if (stopping_ || tasks_.size() >= idle_ + max_queued_) return false;
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

void WorkerLane::Shutdown() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(tasks_);
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkerLane::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
      --idle_;
    }
    task();
    task = nullptr;  // the task's captures (a connection) go before the thread counts as idle
    std::lock_guard<std::mutex> lock(mu_);
    ++idle_;
  }
}

}  // namespace belfry
