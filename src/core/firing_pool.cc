#include "core/firing_pool.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/backoff.h"

namespace belfry {
namespace {

constexpr int32_t kMaxShardCount = 6000;  // scheduler.shard_count's limit (config_parser)

int32_t MaxShards(const SchedulerConfig& cfg, const LayoutCell* layout) {
  return layout != nullptr ? kMaxShardCount : cfg.shard_count;
}

// The catch-up scan leaves a slot this long to its on-time firing before treating it as
// missed; it covers the firing itself and clock differences between nodes.
constexpr int64_t kScanGraceMs = 2000;
// A shard whose firing failed is not fired again by a catch-up scan before its back-off ends.
constexpr BackoffPolicy kFiringBackoff{250, 5000};

// A shard's debt is left alone after a failed debt firing (the debt stays owed): 1 s, doubling
// per consecutive failure up to 5 s (jittered, core/backoff.h).
constexpr BackoffPolicy kDebtBackoff{1000, 5000};

std::vector<Backoff> PerShardBackoff(const BackoffPolicy& policy, int32_t shards, uint64_t seed) {
  std::vector<Backoff> out;
  out.reserve(static_cast<size_t>(std::max(0, shards)));
  for (int32_t s = 0; s < shards; ++s) out.emplace_back(policy, seed + static_cast<uint64_t>(s));
  return out;
}

}  // namespace

FiringPool::FiringPool(const SchedulerConfig& cfg, std::vector<Worker> workers, Clock& clock,
                       uint64_t backoff_seed, SchedulerObserver* observer, const LayoutCell* layout)
    : cfg_(cfg),
      clock_(clock),
      observer_(observer),
      layout_(layout),
      workers_(std::move(workers)),
      max_in_flight_(static_cast<size_t>(std::max<int32_t>(1, cfg.firings_in_flight))),
      catch_up_limit_(std::max<int32_t>(1, static_cast<int32_t>(workers_.size()) - 1)),
      // With a LayoutCell, room for any shard count a reshard may reach (the config's limit).
      busy_(MaxShards(cfg, layout), false),
      pending_(MaxShards(cfg, layout), -1),
      retry_after_(MaxShards(cfg, layout), 0),
      backoff_(PerShardBackoff(kFiringBackoff, MaxShards(cfg, layout), backoff_seed)),
      debt_busy_(MaxShards(cfg, layout), false),
      debt_retry_after_(MaxShards(cfg, layout), 0),
      debt_backoff_(PerShardBackoff(kDebtBackoff, MaxShards(cfg, layout), backoff_seed ^ 0x9e3779b97f4a7c15ULL)),
      acked_(workers_.size(), false),
      in_flight_(workers_.size(), 0),
      debt_in_flight_(workers_.size(), 0),
      renewed_epoch_(workers_.size(), 0) {
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
  idle_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void FiringPool::DispatchOnTime(int32_t shard, int64_t minute) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    on_time_.push_back(Request{Request::Kind::kFire, FireRequest{shard, minute, true}});
  }
  cv_.notify_all();
}

void FiringPool::DispatchCatchUpScan() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    ++scan_epoch_;  // also the heartbeat that renews the leases of open firings
    if (scan_queued_) {
      cv_.notify_all();
      return;
    }
    scan_queued_ = true;
    catch_up_.push_back(Request{Request::Kind::kScan, {}});
  }
  cv_.notify_all();
}

bool FiringPool::IdleLocked() const {
  return on_time_.empty() && catch_up_.empty() && debt_.empty() && running_ == 0 && in_flight_total_ == 0;
}

bool FiringPool::HasWorkLocked(size_t index) const {
  const bool catch_up_ok = catch_up_running_ < catch_up_limit_;
  // Debt firings have their own window, so a slow catch-up never fills the on-time one.
  const bool room = in_flight_[index] - debt_in_flight_[index] < max_in_flight_;
  const bool debt_room = debt_in_flight_[index] < max_in_flight_;
  return acked_[index] || (in_flight_[index] > 0 && renewed_epoch_[index] != scan_epoch_) ||
         (room && (!on_time_.empty() || (catch_up_ok && !catch_up_.empty()))) ||
         (debt_room && catch_up_ok && !debt_.empty());
}

bool FiringPool::QuietLocked() const {
  if (running_ != 0) return false;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (HasWorkLocked(i)) return false;
  }
  return true;
}

void FiringPool::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return IdleLocked(); });
}

void FiringPool::Quiesce() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return QuietLocked() || stopping_; });
}

bool FiringPool::PopLocked(bool allow_on_time, bool allow_catch_up, bool allow_debt, Request* out) {
  for (auto [allowed, queue] : {std::pair{allow_on_time, &on_time_}, std::pair{allow_catch_up, &catch_up_},
                                std::pair{allow_debt, &debt_}}) {
    if (allowed && !queue->empty()) {
      *out = queue->front();
      queue->pop_front();
      return true;
    }
  }
  return false;
}

void FiringPool::WorkerLoop(size_t index) {
  const Worker& w = workers_[index];
  InFlightList flights;  // only this thread touches it
  std::unique_lock<std::mutex> lock(mu_);
  const auto room = [&] { return in_flight_[index] - debt_in_flight_[index] < max_in_flight_; };
  const auto debt_room = [&] { return debt_in_flight_[index] < max_in_flight_; };
  while (true) {
    if (IdleLocked() || QuietLocked()) idle_cv_.notify_all();
    cv_.wait(lock, [&] { return stopping_ || HasWorkLocked(index); });
    if (acked_[index] || (stopping_ && !flights.empty())) {
      acked_[index] = false;
      const bool wait_all = stopping_;
      ++running_;
      lock.unlock();
      CompleteDone(index, wait_all, &flights);
      lock.lock();
      --running_;
      cv_.notify_all();
      if (IdleLocked() || QuietLocked()) idle_cv_.notify_all();
      continue;
    }
    if (stopping_) return;
    if (!flights.empty() && renewed_epoch_[index] != scan_epoch_) {
      // The leases of firings whose acks are still arriving (a paced or slow catch-up) must not
      // lapse while this worker waits for work.
      renewed_epoch_[index] = scan_epoch_;
      lock.unlock();
      for (const std::unique_ptr<InFlight>& f : flights) w.firer->RenewIfDue(f->pending);
      lock.lock();
      continue;
    }
    Request req;
    const bool catch_up_ok = catch_up_running_ < catch_up_limit_;
    if (!PopLocked(room(), room() && catch_up_ok, debt_room() && catch_up_ok, &req)) continue;
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
      if (s < 0 || static_cast<size_t>(s) >= busy_.size()) {
        // ignore: cannot happen with a well-formed ticker
      } else if (req.fire.debt) {
        lock.unlock();  // debt_busy_[s] was set when the request was queued
        StartFire(index, req.fire, &flights);
        lock.lock();
      } else if (busy_[s]) {
        pending_[s] = std::max(pending_[s], req.fire.minute);
      } else {
        busy_[s] = true;
        lock.unlock();
        StartFire(index, req.fire, &flights);
        lock.lock();
      }
    }
    --running_;
    if (is_catch_up) --catch_up_running_;
    cv_.notify_all();
    if (IdleLocked() || QuietLocked()) idle_cv_.notify_all();
  }
}

void FiringPool::StartFire(size_t index, const FireRequest& req, InFlightList* flights) {
  for (const std::unique_ptr<InFlight>& f : *flights) workers_[index].firer->RenewIfDue(f->pending);
  auto flight = std::make_unique<InFlight>();
  flight->request = req;
  Status error;
  ShardFirer& firer = *workers_[index].firer;
  const ShardFirer::Outcome outcome = req.debt ? firer.BeginDebt(req.shard, &flight->pending, &error)
                                               : firer.Begin(req.shard, req.minute, &flight->pending, &error);
  if (outcome != ShardFirer::Outcome::kFired) {
    std::lock_guard<std::mutex> lock(mu_);
    if (req.debt) {
      EndDebtLocked(req.shard, outcome);
    } else {
      EndFireLocked(req, outcome);
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++in_flight_[index];
    ++in_flight_total_;
    if (req.debt) ++debt_in_flight_[index];
  }
  // Runs on the sink's delivery thread (or here, if the acks are already in).
  flight->pending.NotifyWhenDone([this, index] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      acked_[index] = true;
    }
    cv_.notify_all();
  });
  flights->push_back(std::move(flight));
}

void FiringPool::CompleteDone(size_t index, bool wait_all, InFlightList* flights) {
  for (auto it = flights->begin(); it != flights->end();) {
    InFlight& f = **it;
    if (!wait_all && !f.pending.Done()) {
      workers_[index].firer->RenewIfDue(f.pending);  // its acks are still arriving
      ++it;
      continue;
    }
    const ShardFirer::Outcome outcome = workers_[index].firer->Complete(f.pending);
    const FireRequest req = f.request;
    it = flights->erase(it);  // drops the batches: no callback can reach us after this
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_[index];
    --in_flight_total_;
    if (req.debt) {
      --debt_in_flight_[index];
      EndDebtLocked(req.shard, outcome);
    } else {
      EndFireLocked(req, outcome);
    }
  }
}

void FiringPool::EndFireLocked(const FireRequest& req, ShardFirer::Outcome outcome) {
  const int32_t s = req.shard;
  if (outcome == ShardFirer::Outcome::kFailed) {
    retry_after_[s] = clock_.NowMs() + backoff_[s].NextDelayMs();
  } else {
    backoff_[s].Reset();
    retry_after_[s] = 0;
  }
  busy_[s] = false;
  if (pending_[s] > req.minute && !stopping_) {
    // Asked for again while it fired: fire the newer minute next, ahead of its queue.
    FireRequest next = req;
    next.minute = pending_[s];
    (req.on_time ? on_time_ : catch_up_).push_front(Request{Request::Kind::kFire, next});
  }
  pending_[s] = -1;
}

void FiringPool::EndDebtLocked(int32_t shard, ShardFirer::Outcome outcome) {
  debt_busy_[shard] = false;
  if (outcome == ShardFirer::Outcome::kFailed) {
    debt_retry_after_[shard] = clock_.NowMs() + debt_backoff_[shard].NextDelayMs();
  } else {
    debt_backoff_[shard].Reset();
    debt_retry_after_[shard] = 0;
  }
}

void FiringPool::HandleScan(const Worker& w) {
  StatusOr<std::vector<ShardState>> states = w.ledger->LoadStates();
  if (!states.ok()) {  // the next scan retries
    if (observer_ != nullptr) observer_->OnScanFailed(states.status());
    return;
  }
  const EpochMs now = clock_.NowMs();
  // A fresh database: every shard's schedule starts at the first scan of the first node, so a
  // node that stops before its ticker reached every shard leaves them to the others' catch-up.
  std::optional<ShardLayout> layout;
  if (layout_ != nullptr) layout = layout_->Get();
  const ShardLayout* l = layout ? &*layout : nullptr;
  for (const FireRequest& r : WatermarkStarts(*states, now, kScanGraceMs, cfg_, l)) {
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
    cv_.notify_all();
  }
  std::vector<FireRequest> requests = CatchUpRequests(*states, now, kScanGraceMs, cfg_, l);
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
    // Then the debt, oldest first, one firing per shard at a time.
    for (const FireRequest& r : DebtRequests(*states, cfg_, l)) {
      if (stopping_) break;
      if (debt_busy_[r.shard] || debt_retry_after_[r.shard] > now) continue;
      debt_busy_[r.shard] = true;
      debt_.push_back(Request{Request::Kind::kFire, r});
    }
  }
  if (observer_ != nullptr) observer_->OnCatchUpDebt(TotalDebtMinutes(*states));
  cv_.notify_all();
}

}  // namespace belfry
