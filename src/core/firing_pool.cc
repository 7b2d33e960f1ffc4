#include "core/firing_pool.h"

#include <algorithm>

namespace belfry {
namespace {

// The catch-up scan leaves a slot this long to its on-time firing before treating it as
// missed; it covers the firing itself and clock differences between nodes.
constexpr int64_t kScanGraceMs = 2000;
constexpr int64_t kMaxBackoffMs = 5000;

}  // namespace

FiringPool::FiringPool(const SchedulerConfig& cfg, std::vector<Worker> workers, Clock& clock)
    : cfg_(cfg),
      clock_(clock),
      workers_(std::move(workers)),
      busy_(cfg.shard_count, false),
      pending_(cfg.shard_count, -1),
      retry_after_(cfg.shard_count, 0),
      failures_(cfg.shard_count, 0) {
  for (size_t i = 0; i < workers_.size(); ++i) threads_.emplace_back([this, i] { WorkerLoop(i); });
}

FiringPool::~FiringPool() { Stop(); }

void FiringPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void FiringPool::DispatchOnTime(int32_t shard, int64_t minute) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    on_time_.push_back(Request{Request::Kind::kFire, FireRequest{shard, minute, true}});
  }
  cv_.notify_one();
}

void FiringPool::DispatchCatchUpScan() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || scan_queued_) return;
    scan_queued_ = true;
    catch_up_.push_back(Request{Request::Kind::kScan, {}});
  }
  cv_.notify_one();
}

void FiringPool::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return on_time_.empty() && catch_up_.empty() && running_ == 0; });
}

bool FiringPool::PopLocked(bool allow_catch_up, Request* out) {
  if (!on_time_.empty()) {
    *out = on_time_.front();
    on_time_.pop_front();
    return true;
  }
  if (allow_catch_up && !catch_up_.empty()) {
    *out = catch_up_.front();
    catch_up_.pop_front();
    return true;
  }
  return false;
}

void FiringPool::WorkerLoop(size_t index) {
  const Worker& w = workers_[index];
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    Request req;
    const int32_t catch_up_limit = std::max<int32_t>(1, static_cast<int32_t>(workers_.size()) - 1);
    cv_.wait(lock, [&] {
      return stopping_ || !on_time_.empty() || (!catch_up_.empty() && catch_up_running_ < catch_up_limit);
    });
    if (stopping_) return;
    if (!PopLocked(catch_up_running_ < catch_up_limit, &req)) continue;
    const bool is_catch_up = req.kind == Request::Kind::kScan || !req.fire.on_time;
    ++running_;
    if (is_catch_up) ++catch_up_running_;
    if (req.kind == Request::Kind::kScan) {
      scan_queued_ = false;
      lock.unlock();
      HandleScan(w);
      lock.lock();
    } else {
      const int32_t s = req.fire.shard;
      if (s < 0 || s >= cfg_.shard_count) {
        // ignore: cannot happen with a well-formed ticker
      } else if (busy_[s]) {
        pending_[s] = std::max(pending_[s], req.fire.minute);
      } else {
        busy_[s] = true;
        FireRequest next = req.fire;
        while (true) {
          lock.unlock();
          HandleFire(w, next);
          lock.lock();
          if (pending_[s] <= next.minute || stopping_) break;
          next.minute = pending_[s];
          pending_[s] = -1;
        }
        pending_[s] = -1;
        busy_[s] = false;
      }
    }
    --running_;
    if (is_catch_up) --catch_up_running_;
    cv_.notify_all();
    if (on_time_.empty() && catch_up_.empty() && running_ == 0) idle_cv_.notify_all();
  }
}

void FiringPool::HandleFire(const Worker& w, FireRequest req) {
  Status error;
  const ShardFirer::Outcome outcome = w.firer->FireUpTo(req.shard, req.minute, &error);
  std::lock_guard<std::mutex> lock(mu_);
  if (outcome == ShardFirer::Outcome::kFailed) {
    const int64_t n = ++failures_[req.shard];
    const int64_t backoff = std::min<int64_t>(kMaxBackoffMs, 250LL << std::min<int64_t>(n - 1, 5));
    retry_after_[req.shard] = clock_.NowMs() + backoff;
  } else {
    failures_[req.shard] = 0;
    retry_after_[req.shard] = 0;
  }
}

void FiringPool::HandleScan(const Worker& w) {
  StatusOr<std::vector<ShardState>> states = w.ledger->LoadStates();
  if (!states.ok()) return;  // the next scan retries; the ledger adapter logs the fault
  const EpochMs now = clock_.NowMs();
  // A fresh database: every shard's schedule starts at the first scan of the first node, so a
  // node that stops before its ticker reached every shard leaves them to the others' catch-up.
  for (const FireRequest& r : WatermarkStarts(*states, now, kScanGraceMs, cfg_)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      // A shard this node is firing right now gets its watermark from that firing. Holding the
      // shard busy keeps an on-time firing from running under the same claim meanwhile.
      if (busy_[r.shard]) continue;
      busy_[r.shard] = true;
    }
    w.firer->StartWatermark(r.shard, r.minute);  // on failure the next scan tries again
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_[r.shard] = false;
      if (pending_[r.shard] >= 0) {
        // An on-time request arrived meanwhile and was folded: queue it again.
        on_time_.push_front(Request{Request::Kind::kFire, FireRequest{r.shard, pending_[r.shard], true}});
        pending_[r.shard] = -1;
      }
    }
    cv_.notify_one();
  }
  std::vector<FireRequest> requests = CatchUpRequests(*states, now, kScanGraceMs, cfg_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const FireRequest& r : requests) {
      if (stopping_) break;
      if (retry_after_[r.shard] > now) continue;
      if (busy_[r.shard]) {
        pending_[r.shard] = std::max(pending_[r.shard], r.minute);
        continue;
      }
      catch_up_.push_back(Request{Request::Kind::kFire, r});
    }
  }
  cv_.notify_all();
}

}  // namespace belfry
