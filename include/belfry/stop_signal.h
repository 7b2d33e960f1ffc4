// StopSignal: a one-shot, thread-safe "please stop" flag that also wakes waiters.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace belfry {

class StopSignal final {
 public:
  StopSignal() = default;
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  void Request() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requested_.store(true);
    }
    cv_.notify_all();
  }
  bool requested() const { return requested_.load(); }

  // Waits on a steady-clock duration; returns false iff stop was requested.
  // Used by SystemClock and by adapters' retry backoff (never by core code directly).
  template <typename Rep, typename Period>
  bool WaitFor(std::chrono::duration<Rep, Period> d) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, d, [this] { return requested_.load(); });
    return !requested_.load();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> requested_{false};
};

}  // namespace belfry
