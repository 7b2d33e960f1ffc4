// FiringPool: the worker threads that fire shards. On-time slots go before catch-up work, and
// catch-up work before debt firings; at most one firing per shard runs at a time (a request for
// a busy shard is folded into it), and at least one worker is always kept free of catch-up and
// debt work so the present stays on time. A shard's debt firings are tracked apart from its
// on-time firings (at most one of each per shard at a time), so a long catch-up never holds the
// shard's next slot back (docs/catch-up.md).
//
// A worker does not wait for a firing's acks before it takes the next request: it queues the
// firing's triggers (ShardFirer::Begin), keeps up to `firings_in_flight` such firings open,
// and records each one's watermark (ShardFirer::Complete) as soon as the sink reports all of its
// triggers acknowledged. A shard stays busy until its firing is recorded.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/scheduler_observer.h"
#include "belfry/shard_ledger.h"
#include "core/backoff.h"
#include "core/catchup_planner.h"
#include "core/layout_cell.h"
#include "core/shard_firer.h"
#include "core/shard_ticker.h"

namespace belfry {

class FiringPool final : public TickDispatcher {
 public:
  struct Worker {
    ShardFirer* firer = nullptr;    // not owned
    ShardLedger* ledger = nullptr;  // not owned; used for catch-up scans
  };

  // Starts one thread per worker. `backoff_seed` seeds the jitter of the per-shard back-off
  // after a failed firing (core/backoff.h): give each node a different one (random), so that
  // nodes do not retry in lockstep. `observer` (optional) hears the catch-up debt each scan reads.
  // REQUIRES: !workers.empty(); everything outlives the pool.
  // `layout` (optional): the node's LayoutCell; the pool then serves any shard of a reshard's
  // layouts and plans its scans by it (docs/resharding.md).
  FiringPool(const SchedulerConfig& cfg, std::vector<Worker> workers, Clock& clock, uint64_t backoff_seed,
             SchedulerObserver* observer = nullptr, const LayoutCell* layout = nullptr);
  // Finishes the firings in progress (waiting for their acks and recording them), drops queued
  // requests (the ledger still shows them as not fired, so any node fires them later) and joins
  // the threads.
  ~FiringPool() override;
  FiringPool(const FiringPool&) = delete;
  FiringPool& operator=(const FiringPool&) = delete;

  void DispatchOnTime(int32_t shard, int64_t minute) override;
  void DispatchCatchUpScan() override;
  // Blocks until every queued request has been handled and no firing is running or in flight.
  void Drain();
  // Blocks until no worker can do more before an acknowledgement or a new request arrives: every
  // request a worker may take has been handled (one waiting for room in a full firings_in_flight
  // window stays queued), no worker is querying or recording, and no acknowledgement is waiting
  // to be recorded; firings whose acks are outstanding may stay open. For simulations that step
  // a FakeClock, and for tests that check what the pool did not do.
  void Quiesce();
  void Stop();

 private:
  struct Request {
    enum class Kind { kFire, kScan };
    Kind kind = Kind::kFire;
    FireRequest fire;
  };
  // A firing whose triggers are queued; owned by the worker thread that began it.
  struct InFlight {
    FireRequest request;
    ShardFirer::Pending pending;
  };
  using InFlightList = std::deque<std::unique_ptr<InFlight>>;

  void WorkerLoop(size_t index);
  bool PopLocked(bool allow_on_time, bool allow_catch_up, bool allow_debt, Request* out);
  // Called without mu_. Begins `req` on worker `index`; an open firing goes to `flights`.
  void StartFire(size_t index, const FireRequest& req, InFlightList* flights);
  // Called without mu_. Records the firings whose acks are all in (all of them, waiting, if
  // `wait_all`).
  void CompleteDone(size_t index, bool wait_all, InFlightList* flights);
  // Under mu_: a firing of `req.shard` ended with `outcome`; frees the shard and requeues what
  // was folded into it. Dispatches debt firings to EndDebtLocked.
  void EndFireLocked(const FireRequest& req, ShardFirer::Outcome outcome);
  // Under mu_: a debt firing of `shard` ended with `outcome`.
  void EndDebtLocked(int32_t shard, ShardFirer::Outcome outcome);
  void HandleScan(const Worker& w);
  bool IdleLocked() const;
  bool QuietLocked() const;
  // Under mu_: whether worker `index` has something to do now (its wait ends).
  bool HasWorkLocked(size_t index) const;

  const SchedulerConfig& cfg_;
  Clock& clock_;
  SchedulerObserver* const observer_;
  const LayoutCell* const layout_;
  std::vector<Worker> workers_;
  const size_t max_in_flight_;
  const int32_t catch_up_limit_;  // workers that may run catch-up and debt work at once

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Request> on_time_;
  std::deque<Request> catch_up_;  // fire requests from scans, and scans themselves
  std::deque<Request> debt_;      // debt requests from scans
  std::vector<bool> busy_;              // per shard
  std::vector<int64_t> pending_;        // per shard: highest minute asked for while busy (-1)
  std::vector<EpochMs> retry_after_;    // per shard: backoff after a failed firing
  std::vector<Backoff> backoff_;        // per shard: consecutive failed firings, jittered
  std::vector<bool> debt_busy_;         // per shard: a debt firing is queued, running or open
  std::vector<EpochMs> debt_retry_after_;  // per shard: pause after a failed debt firing
  std::vector<Backoff> debt_backoff_;      // per shard: consecutive failed debt firings, jittered
  std::vector<bool> acked_;             // per worker: one of its open firings may be done
  std::vector<size_t> in_flight_;       // per worker: open firings (debt firings included)
  std::vector<size_t> debt_in_flight_;  // per worker: open debt firings
  std::vector<uint64_t> renewed_epoch_;  // per worker: the scan epoch it last renewed its leases at
  uint64_t scan_epoch_ = 0;              // bumped by every DispatchCatchUpScan: a lease heartbeat
  size_t in_flight_total_ = 0;
  bool scan_queued_ = false;
  int32_t catch_up_running_ = 0;
  int32_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace belfry
