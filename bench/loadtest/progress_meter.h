// ProgressMeter: prints one progress line per second to stderr while a mode runs
// ("[seed 12s] published 500000/1000000 41.2k/s | applied 300000/1000000 25.0k/s | ETA 28s")
// and keeps each counter's per-second increments as its throughput-over-time series.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace belfry::loadtest {

// One monotonically increasing count. Add() and Get() are thread-safe and cheap.
class ProgressCounter final {
 public:
  ProgressCounter(std::string name, int64_t total) : name_(std::move(name)), total_(total) {}
  void Add(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  int64_t Get() const { return value_.load(std::memory_order_relaxed); }
  const std::string& name() const { return name_; }
  int64_t total() const { return total_; }  // 0 = open-ended

 private:
  friend class ProgressMeter;
  const std::string name_;
  const int64_t total_;
  std::atomic<int64_t> value_{0};
  std::vector<int64_t> per_second_;  // written by the meter thread only
  std::deque<int64_t> recent_;       // last samples, for the rate
};

class ProgressMeter final {
 public:
  // `extra`, if set, is called once per line and its text appended (e.g. "dup 0").
  explicit ProgressMeter(std::string mode, std::function<std::string()> extra = nullptr);
  // Stops the thread if it still runs.
  ~ProgressMeter();
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  // REQUIRES: called before Start(). The last counter with a total drives the ETA.
  ProgressCounter* AddCounter(std::string name, int64_t total);
  void Start();
  // Prints the final line and joins the thread. Idempotent.
  void Stop();

  // Per-second increments of the counter, one entry per whole second since Start(), plus the
  // partial last second. REQUIRES: Stop() was called.
  std::vector<int64_t> PerSecond(const ProgressCounter* counter) const { return counter->per_second_; }
  double elapsed_seconds() const;

 private:
  void Loop();
  void Sample(bool final_line);

  const std::string mode_;
  const std::function<std::string()> extra_;
  std::vector<std::unique_ptr<ProgressCounter>> counters_;
  std::vector<int64_t> last_values_;
  int64_t start_ns_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::thread thread_;
};

// "1.23M", "45.6k", "789".
std::string HumanCount(double v);

}  // namespace belfry::loadtest
