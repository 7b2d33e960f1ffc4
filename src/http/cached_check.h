// CachedCheck: answers a costly check (readiness: a database connection and a schema query) from
// its last result, and runs it again at most once per `min_interval`, on a thread of its own.
// Every /readyz and every /metrics scrape used to open a new database connection and wait for it:
// an unreachable database stalled them all. Now they never wait for the check, and the database
// sees at most one connection a second however often they come.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "belfry/clock.h"
#include "belfry/status.h"

namespace belfry {

class CachedCheck final {
 public:
  // REQUIRES: `clock` outlives this. `check` runs on this object's thread only.
  CachedCheck(std::function<Status()> check, Clock& clock, int64_t min_interval_ms = 1000,
              int64_t stale_after_ms = 10'000);
  // Waits for a check in progress, then joins the thread.
  ~CachedCheck();
  CachedCheck(const CachedCheck&) = delete;
  CachedCheck& operator=(const CachedCheck&) = delete;

  // The last finished check's result, without waiting. Starts a check when none runs and the
  // last one started `min_interval` ago or more. Retryable when no check has finished yet, or
  // when the running one started `stale_after` ago or more (a check that hangs is a failure).
  // Thread-safe.
  Status Get();

  // Starts a check when none has started, and waits up to `timeout` (real time) for the first
  // one to finish. True when a result is stored. For startup: a node that says it is serving
  // answers its first probe from a real check, not with "not finished yet".
  bool AwaitFirstResult(std::chrono::milliseconds timeout);

  // Checks started, and finished (their result stored), so far (for tests).
  int64_t checks_started() const;
  int64_t checks_finished() const;

 private:
  void Run();

  const std::function<Status()> check_;
  Clock& clock_;
  const int64_t min_interval_ms_;
  const int64_t stale_after_ms_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable finished_;  // signalled when a check's result is stored
  std::optional<Status> last_;       // the last finished check's result
  std::optional<EpochMs> started_;   // when the last check started
  bool running_ = false;             // a check is requested or in progress
  bool stopping_ = false;
  int64_t checks_started_ = 0;
  int64_t checks_finished_ = 0;
  std::thread thread_;
};

}  // namespace belfry
