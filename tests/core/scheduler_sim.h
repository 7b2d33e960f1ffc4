// A deterministic single-threaded scheduler simulation for unit tests: ShardTicker driving a
// ShardFirer over a FakeClock, FakeJobStore, FakeShardLedger and FakeTriggerSink.
#pragma once

#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "belfry/scheduler_observer.h"
#include "core/catchup_planner.h"
#include "core/shard_firer.h"
#include "core/shard_hash.h"
#include "core/shard_ticker.h"
#include "core/slot_math.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_job_store.h"
#include "fakes/fake_shard_ledger.h"
#include "fakes/fake_trigger_sink.h"

namespace belfry {

// Thread-safe, as the interface requires: FiringPool's workers report at the same time. Read the
// fields once the firers are idle (or the pool is stopped).
class RecordingObserver final : public SchedulerObserver {
 public:
  void OnFired(const ShardMinuteReport& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    fired.push_back(r);
  }
  void OnMissed(int64_t c, int64_t s, int64_t t) override {
    std::lock_guard<std::mutex> lock(mu_);
    caught_up += c;
    skipped += s;
    too_old += t;
  }
  void OnFiringFailed(int32_t, const Status&) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++failures;
  }
  void OnRefusedTopic(std::string_view) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++refused;
  }
  void OnReleaseFailed(int32_t, const Status&) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++release_failures;
  }
  void OnTriggerRefused(std::string_view reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    undeliverable.emplace_back(reason);
  }
  void OnUnackedResent(int64_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    resent += n;
  }
  void OnUnackedRequery(std::string_view reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    requeries.emplace_back(reason);
  }
  std::vector<ShardMinuteReport> fired;
  int64_t resent = 0;                  // OnUnackedResent
  std::vector<std::string> requeries;  // OnUnackedRequery reasons
  int64_t caught_up = 0, skipped = 0, too_old = 0, failures = 0, refused = 0, release_failures = 0;
  std::vector<std::string> undeliverable;  // OnTriggerRefused reasons

 private:
  std::mutex mu_;
};

// The fakes a firing test is made of, as every firer fixture holds them: a clock, a ledger of 120
// shards, a store, a sink, an observer, and a policy that allows every topic except `denied`.
// Fixtures derive from it and add their firer (and what else they need) after it.
class FiringFakes : public ::testing::Test {
 protected:
  explicit FiringFakes(EpochMs now, std::vector<std::string> denied = {})
      : clock_(now), ledger_(120, clock_), policy_({"*"}, std::move(denied)) {}

  SchedulerConfig cfg_;
  FakeClock clock_;
  FakeJobStore store_;
  FakeShardLedger ledger_;
  FakeTriggerSink sink_;
  TopicPolicy policy_;
  RecordingObserver observer_;
};

// Runs the ticker synchronously: on-time slots and catch-up scans fire on the ticker's thread. A
// scan also fires one debt chunk of every shard that owes one, as FiringPool::HandleScan queues.
class SyncDispatcher final : public TickDispatcher {
 public:
  SyncDispatcher(const SchedulerConfig& cfg, ShardFirer& firer, ShardLedger& ledger, Clock& clock)
      : cfg_(cfg), firer_(firer), ledger_(ledger), clock_(clock) {}
  void DispatchOnTime(int32_t shard, int64_t minute) override { firer_.FireUpTo(shard, minute); }
  // As FiringPool::HandleScan: start the watermarks of shards that never fired, then catch up.
  void DispatchCatchUpScan() override {
    auto states = ledger_.LoadStates();
    for (const FireRequest& r : WatermarkStarts(*states, clock_.NowMs(), 2000, cfg_)) {
      firer_.StartWatermark(r.shard, r.minute);
    }
    for (const FireRequest& r : CatchUpRequests(*states, clock_.NowMs(), 2000, cfg_)) {
      firer_.FireUpTo(r.shard, r.minute);
    }
    for (const FireRequest& r : DebtRequests(*states, cfg_)) firer_.FireDebt(r.shard);
  }

 private:
  const SchedulerConfig& cfg_;
  ShardFirer& firer_;
  ShardLedger& ledger_;
  Clock& clock_;
};

using SlotKey = std::tuple<std::string, EpochMs>;  // (job id, scheduledFor)

inline std::set<SlotKey> SentKeys(const FakeTriggerSink& sink, size_t* duplicates = nullptr) {
  std::set<SlotKey> keys;
  size_t dups = 0;
  for (const SentTrigger& t : sink.sent()) {
    if (!keys.emplace(t.job_id, t.scheduled_for_ms).second) ++dups;
  }
  if (duplicates) *duplicates = dups;
  return keys;
}

// Every (job, slot) with slot in [from, to] that the design's due rule selects.
inline std::set<SlotKey> ExpectedKeys(const std::map<std::string, FakeJobStore::Row>& rows, EpochMs from,
                                      EpochMs to, int64_t tick_ms) {
  std::set<SlotKey> out;
  for (const auto& [id, row] : rows) {
    const JobSpec& s = row.spec;
    for (int64_t m = EpochMinuteOf(from) - 1; m <= EpochMinuteOf(to) + 1; ++m) {
      const EpochMs slot = SlotMs(m, s.shard, tick_ms);
      if (slot < from || slot > to) continue;
      if (IsDueAtSlot(s.interval_minutes, s.offset_minutes, s.start_at, s.end_at, row.paused, m, slot)) {
        out.emplace(id, slot);
      }
    }
  }
  return out;
}

inline JobSpec MakeJob(const std::string& id, int interval, int offset) {
  JobSpec s;
  s.id = id;
  s.interval_minutes = interval;
  s.offset_minutes = offset;
  s.shard = ShardForId(id, 120);
  s.topic = "out." + std::to_string(interval);
  s.details_json = R"({"n":1})";
  return s;
}

}  // namespace belfry
