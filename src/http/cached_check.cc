#include "http/cached_check.h"

#include <exception>
#include <string>
#include <utility>

namespace belfry {

CachedCheck::CachedCheck(std::function<Status()> check, Clock& clock, int64_t min_interval_ms, int64_t stale_after_ms)
    : check_(std::move(check)), clock_(clock), min_interval_ms_(min_interval_ms), stale_after_ms_(stale_after_ms) {
  thread_ = std::thread([this] { Run(); });
}

CachedCheck::~CachedCheck() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Status CachedCheck::Get() {
  bool start = false;
  Status out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const EpochMs now = clock_.NowMs();
    if (!running_ && (!started_ || now - *started_ >= min_interval_ms_)) {
      running_ = true;
      started_ = now;
      ++checks_started_;
      start = true;
    }
    if (running_ && !start && started_ && now - *started_ >= stale_after_ms_) {
      out = Status::Retryable("the readiness check has not answered for " + std::to_string((now - *started_) / 1000) +
                              " s (is the database reachable?)");
    } else if (last_) {
      out = *last_;
    } else {
      out = Status::Retryable("the readiness check has not finished yet");
    }
  }
  if (start) wake_.notify_one();
  return out;
}

bool CachedCheck::AwaitFirstResult(std::chrono::milliseconds timeout) {
  (void)Get();
  std::unique_lock<std::mutex> lock(mu_);
  return finished_.wait_for(lock, timeout, [this] { return last_.has_value(); });
}

int64_t CachedCheck::checks_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return checks_started_;
}

int64_t CachedCheck::checks_finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return checks_finished_;
}

void CachedCheck::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || running_; });
    if (stopping_) return;
    lock.unlock();
    Status result;
    try {
      result = check_();
    } catch (const std::exception& e) {
      result = Status::Retryable(std::string("readiness check threw: ") + e.what());
    }
    lock.lock();
    last_ = std::move(result);
    running_ = false;
    ++checks_finished_;
    finished_.notify_all();
  }
}

}  // namespace belfry
