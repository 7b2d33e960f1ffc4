// ShardFirer: fires one shard up to a minute: claim, plan (misfire policy), stream the due jobs
// into the trigger sink, wait for every ack, then record the shard-minute as fired.
//
// Thread-compatible: one ShardFirer per worker thread, each with its own JobStore and
// ShardLedger (database connections); the TriggerSink may be shared.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/job_store.h"
#include "belfry/scheduler_observer.h"
#include "belfry/shard_ledger.h"
#include "belfry/trigger_sink.h"
#include "core/catchup_planner.h"
#include "core/topic_policy.h"

namespace belfry {

class ShardFirer final {
 public:
  enum class Outcome { kFired, kNotClaimed, kNothingToDo, kFailed };

  // All references must outlive the firer. `policy` is re-checked for every trigger (cached per
  // topic), so a config change also stops jobs stored before it.
  ShardFirer(const SchedulerConfig& cfg, std::string node_id, JobStore& store, ShardLedger& ledger,
             TriggerSink& sink, const TopicPolicy& policy, Clock& clock, SchedulerObserver& observer);
  ShardFirer(const ShardFirer&) = delete;
  ShardFirer& operator=(const ShardFirer&) = delete;

  // Fires `shard` through `target_minute` if this node can claim it. On failure the claim is
  // released and nothing is recorded, so the shard-minutes are fired again later (at-least-once).
  Outcome FireUpTo(int32_t shard, int64_t target_minute, Status* error = nullptr);

  // Records `minute` as the watermark of a shard that never fired, without firing anything, so
  // that its schedule starts now (see WatermarkStarts). Returns kFired if it did; kNothingToDo
  // if the shard has a watermark by now (whoever set it owns what follows); kNotClaimed if
  // another node holds its claim or it is fired through `minute` already.
  Outcome StartWatermark(int32_t shard, int64_t minute, Status* error = nullptr);

 private:
  // Streams one query's due jobs into one batch and waits for the acks.
  Status FireQuery(const DueQuery& q, bool on_time);
  bool TopicAllowed(std::string_view topic);

  const SchedulerConfig& cfg_;
  const std::string node_id_;
  JobStore& store_;
  ShardLedger& ledger_;
  TriggerSink& sink_;
  const TopicPolicy& policy_;
  Clock& clock_;
  SchedulerObserver& observer_;
  std::unordered_map<std::string, bool> topic_allowed_;  // policy cache
};

}  // namespace belfry
