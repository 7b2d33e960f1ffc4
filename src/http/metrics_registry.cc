#include "http/metrics_registry.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "core/unacked_triggers.h"

namespace belfry {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Caps on distinct label values fed from outside the process (command ops and reject reasons).
constexpr size_t kMaxOpLabels = 16;
constexpr size_t kMaxReasonLabels = 64;

Histogram::BucketBoundaries DurationBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

// 0, then half-decades up to a million rows.
Histogram::BucketBoundaries RowBuckets() {
  return {0, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000};
}

// 5 ms to 60 s.
Histogram::BucketBoundaries LatenessBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60};
}

double Seconds(int64_t ms) { return static_cast<double>(std::max<int64_t>(ms, 0)) / 1000.0; }

// Bucket increments for `count` observations of `value` (the last slot is +Inf). Prometheus
// buckets are "less than or equal", so the value goes to the first bound >= value.
std::vector<double> SingleBucketIncrements(const Histogram::BucketBoundaries& bounds, double value,
                                           double count) {
  std::vector<double> inc(bounds.size() + 1, 0.0);
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), value);
  inc[static_cast<size_t>(it - bounds.begin())] = count;
  return inc;
}

}  // namespace

struct MetricsRegistry::Metrics {
  explicit Metrics(const std::string& version)
      : registry(std::make_shared<prometheus::Registry>()),
        triggers_emitted(prometheus::BuildCounter()
                             .Name("belfry_triggers_emitted_total")
                             .Help("Triggers sent to their topic and acknowledged by Kafka.")
                             .Register(*registry)
                             .Add({})),
        scan_failures(prometheus::BuildCounter()
                          .Name("belfry_catch_up_scan_failures_total")
                          .Help("Catch-up scans that could not read the shard ledger; the next tick's "
                                "scan tries again.")
                          .Register(*registry)
                          .Add({})),
        release_failures(prometheus::BuildCounter()
                             .Name("belfry_claim_release_failures_total")
                             .Help("Shard claims whose release failed after a firing that recorded nothing; "
                                   "the lease expires instead.")
                             .Register(*registry)
                             .Add({})),
        triggers_refused_family(
            prometheus::BuildCounter()
                .Name("belfry_triggers_refused_total")
                .Help("Due triggers that were not sent, by reason (topic_policy: the job's topic is "
                      "forbidden by the output-topic policy; message_too_large, topic_authorization, "
                      "invalid_record, policy_violation, invalid_topic, unknown_topic, topic_unavailable: the broker refused "
                      "the trigger for good and it went to the trigger DLQ).")
                .Register(*registry)),
        refused_topic_policy(triggers_refused_family.Add({{"reason", "topic_policy"}})),
        triggers_resent(prometheus::BuildCounter()
                            .Name("belfry_triggers_resent_total")
                            .Help("Triggers a retry after a broker error re-sent from this node's memory as not "
                                  "acknowledged, instead of querying their shard-minute again.")
                            .Register(*registry)
                            .Add({})),
        requeries_family(prometheus::BuildCounter()
                             .Name("belfry_trigger_requeries_total")
                             .Help("Shard-minute ranges whose retry after a broker error re-queries and re-sends "
                                   "every trigger, acknowledged ones too, by reason (untracked, over_bound, "
                                   "claim_lost, layout_changed, range_changed, expired).")
                             .Register(*registry)),
        fired_family(prometheus::BuildCounter()
                         .Name("belfry_shard_minutes_fired_total")
                         .Help("Shard-minutes fired, by kind: on_time (within the misfire threshold), "
                               "catch_up (a missed minute fired with its original slot) or coalesced "
                               "(missed minutes covered by one coalesced query, counted per minute).")
                         .Register(*registry)),
        fired_on_time(fired_family.Add({{"kind", "on_time"}})),
        fired_catch_up(fired_family.Add({{"kind", "catch_up"}})),
        fired_coalesced(fired_family.Add({{"kind", "coalesced"}})),
        caught_up(prometheus::BuildCounter()
                      .Name("belfry_shard_minutes_caught_up_total")
                      .Help("Missed shard-minutes fired late by the misfire policy (fire_all or coalesce).")
                      .Register(*registry)
                      .Add({})),
        skipped_family(prometheus::BuildCounter()
                           .Name("belfry_shard_minutes_skipped_total")
                           .Help("Missed shard-minutes that were never fired, by reason: policy (the skip "
                                 "misfire policy) or too_old (older than max_catchup).")
                           .Register(*registry)),
        skipped_policy(skipped_family.Add({{"reason", "policy"}})),
        skipped_too_old(skipped_family.Add({{"reason", "too_old"}})),
        firing_failures(prometheus::BuildCounter()
                            .Name("belfry_firing_failures_total")
                            .Help("Shard firings that failed (claim, query, send or bookkeeping error); "
                                  "the shard is retried.")
                            .Register(*registry)
                            .Add({})),
        tick_duration(prometheus::BuildHistogram()
                          .Name("belfry_tick_duration_seconds")
                          .Help("Time to fire one shard-minute, from claim to the last Kafka ack.")
                          .Register(*registry)
                          .Add({}, DurationBuckets())),
        tick_query(prometheus::BuildHistogram()
                       .Name("belfry_tick_query_seconds")
                       .Help("Time of one shard-minute's due-jobs query, until its last row arrived.")
                       .Register(*registry)
                       .Add({}, DurationBuckets())),
        tick_rows(prometheus::BuildHistogram()
                      .Name("belfry_tick_query_rows")
                      .Help("Rows returned by one shard-minute's due-jobs query (triggers sent plus "
                            "triggers refused).")
                      .Register(*registry)
                      .Add({}, RowBuckets())),
        lateness_bounds(LatenessBuckets()),
        lateness(prometheus::BuildHistogram()
                     .Name("belfry_trigger_lateness_seconds")
                     .Help("Per trigger: Kafka ack time minus scheduledFor (measured once per "
                           "shard-minute, at its last ack, and counted once per trigger).")
                     .Register(*registry)
                     .Add({}, lateness_bounds)),
        commands_family(prometheus::BuildCounter()
                            .Name("belfry_commands_total")
                            .Help("Commands consumed: status=\"applied\" by op, status=\"rejected\" by "
                                  "reason.")
                            .Register(*registry)),
        command_batches(prometheus::BuildCounter()
                            .Name("belfry_command_batches_total")
                            .Help("Command batches committed (one database transaction each).")
                            .Register(*registry)
                            .Add({})),
        command_apply(prometheus::BuildHistogram()
                          .Name("belfry_command_apply_seconds")
                          .Help("Time to apply one command batch to PostgreSQL, retries included.")
                          .Register(*registry)
                          .Add({}, DurationBuckets())),
        consumer_lag(prometheus::BuildGauge()
                         .Name("belfry_consumer_lag")
                         .Help("Messages of the commands topic not yet consumed by this node, summed "
                               "over its assigned partitions (NaN until known).")
                         .Register(*registry)
                         .Add({})),
        producer_queue(prometheus::BuildGauge()
                           .Name("belfry_producer_queue_messages")
                           .Help("Messages waiting in the trigger producer's queue (sent, not yet "
                                 "acknowledged).")
                           .Register(*registry)
                           .Add({})),
        catch_up_producer_queue(prometheus::BuildGauge()
                                    .Name("belfry_catch_up_producer_queue_messages")
                                    .Help("Messages waiting in the catch-up producer's queue (sent, not "
                                          "yet acknowledged).")
                                    .Register(*registry)
                                    .Add({})),
        catch_up_debt(prometheus::BuildGauge()
                          .Name("belfry_catch_up_debt_minutes")
                          .Help("Missed shard-minutes owed by every shard and not fired yet, as this "
                                "node's last catch-up scan read them (docs/catch-up.md).")
                          .Register(*registry)
                          .Add({})),
        catch_up_rate(prometheus::BuildGauge()
                          .Name("belfry_catch_up_rate")
                          .Help("Triggers per second this node's catch-up may send now: scheduler.catch_up_rate, "
                                "or less while on-time firings are late (docs/catch-up.md, \"Pacing\").")
                          .Register(*registry)
                          .Add({})),
        build_info(prometheus::BuildGauge()
                       .Name("belfry_build_info")
                       .Help("Always 1; the version label says which belfry build is running.")
                       .Register(*registry)
                       .Add({{"version", version}})),
        up(prometheus::BuildGauge()
               .Name("belfry_up")
               .Help("Always 1 while the process serves metrics.")
               .Register(*registry)
               .Add({})),
        ready(prometheus::BuildGauge()
                  .Name("belfry_ready")
                  .Help("1 when the node is ready, as GET /readyz answers at the scrape: its schema and config "
                        "agree with the database and its last 10 shard firings did not all fail; else 0.")
                  .Register(*registry)
                  .Add({})) {
    for (const char* op : {"upsert", "delete", "pause", "resume"}) {
      commands_family.Add({{"op", op}, {"status", "applied"}});
      known_ops.insert(op);
    }
    consumer_lag.Set(std::numeric_limits<double>::quiet_NaN());
    build_info.Set(1);
    up.Set(1);
  }

  Counter& CommandCounter(const std::map<std::string, std::string>& labels) {
    return commands_family.Add(labels);
  }

  // REQUIRES: label_mu held.
  std::string CappedLabel(std::set<std::string>& known, size_t cap, const std::string& value) {
    if (known.count(value) > 0) return value;
    if (known.size() >= cap) return "other";
    known.insert(value);
    return value;
  }

  std::shared_ptr<prometheus::Registry> registry;
  Counter& triggers_emitted;
  Family<Counter>& triggers_refused_family;
  Counter& refused_topic_policy;
  Counter& triggers_resent;
  Family<Counter>& requeries_family;
  Family<Counter>& fired_family;
  Counter& fired_on_time;
  Counter& fired_catch_up;
  Counter& fired_coalesced;
  Counter& caught_up;
  Family<Counter>& skipped_family;
  Counter& skipped_policy;
  Counter& skipped_too_old;
  Counter& firing_failures;
  Counter& scan_failures;
  Counter& release_failures;
  Histogram& tick_duration;
  Histogram& tick_query;
  Histogram& tick_rows;
  const Histogram::BucketBoundaries lateness_bounds;
  Histogram& lateness;
  Family<Counter>& commands_family;
  Counter& command_batches;
  Histogram& command_apply;
  Gauge& consumer_lag;
  Gauge& producer_queue;
  Gauge& catch_up_producer_queue;
  Gauge& catch_up_debt;
  Gauge& catch_up_rate;
  Gauge& build_info;
  Gauge& up;
  Gauge& ready;

  std::mutex label_mu;
  std::set<std::string> known_ops;      // guarded by label_mu
  std::set<std::string> known_reasons;  // guarded by label_mu

  std::mutex sampler_mu;
  Sampler sampler;  // guarded by sampler_mu
};

MetricsRegistry::MetricsRegistry(std::string version) : m_(std::make_unique<Metrics>(version)) {
  // The record-error reasons (ClassifyTriggerError), exported at 0 so that alerts see them.
  for (const char* reason : {"message_too_large", "topic_authorization", "invalid_record", "policy_violation",
                             "invalid_topic", "unknown_topic", "topic_unavailable"}) {
    m_->triggers_refused_family.Add({{"reason", reason}});
  }
  for (std::string_view reason : {UnackedTriggers::kUntracked, UnackedTriggers::kOverBound, UnackedTriggers::kClaimLost,
                                  UnackedTriggers::kLayoutChanged, UnackedTriggers::kRangeChanged,
                                  UnackedTriggers::kExpired}) {
    m_->requeries_family.Add({{"reason", std::string(reason)}});
  }
}

MetricsRegistry::~MetricsRegistry() = default;

void MetricsRegistry::OnFired(const ShardMinuteReport& r) {
  m_->triggers_emitted.Increment(static_cast<double>(std::max<int64_t>(r.triggers - r.undeliverable, 0)));
  if (r.coalesced) {
    m_->fired_coalesced.Increment(
        static_cast<double>(std::max<int64_t>(r.last_minute - r.first_minute + 1, 1)));
  } else if (r.on_time) {
    m_->fired_on_time.Increment();
  } else {
    m_->fired_catch_up.Increment();
  }
  m_->tick_duration.Observe(Seconds(r.total_ms));
  m_->tick_query.Observe(Seconds(r.query_ms));
  m_->tick_rows.Observe(static_cast<double>(std::max<int64_t>(r.triggers + r.refused, 0)));
  if (r.triggers > 0) {
    const double late = Seconds(r.lateness_ms);
    const double n = static_cast<double>(r.triggers);
    m_->lateness.ObserveMultiple(SingleBucketIncrements(m_->lateness_bounds, late, n), late * n);
  }
}

void MetricsRegistry::OnMissed(int64_t caught_up, int64_t skipped, int64_t too_old) {
  if (caught_up > 0) m_->caught_up.Increment(static_cast<double>(caught_up));
  if (skipped > 0) m_->skipped_policy.Increment(static_cast<double>(skipped));
  if (too_old > 0) m_->skipped_too_old.Increment(static_cast<double>(too_old));
}

void MetricsRegistry::OnFiringFailed(int32_t, const Status&) { m_->firing_failures.Increment(); }
void MetricsRegistry::OnReleaseFailed(int32_t, const Status&) { m_->release_failures.Increment(); }
void MetricsRegistry::OnScanFailed(const Status&) { m_->scan_failures.Increment(); }

void MetricsRegistry::OnRefusedTopic(std::string_view) { m_->refused_topic_policy.Increment(); }

void MetricsRegistry::OnTriggerRefused(std::string_view reason) {
  // A fixed set of reasons (ClassifyTriggerError): no cardinality to cap.
  m_->triggers_refused_family.Add({{"reason", std::string(reason)}}).Increment();
}

void MetricsRegistry::OnUnackedResent(int64_t triggers) {
  if (triggers > 0) m_->triggers_resent.Increment(static_cast<double>(triggers));
}

void MetricsRegistry::OnUnackedRequery(std::string_view reason) {
  // A fixed set of reasons (UnackedTriggers): no cardinality to cap.
  m_->requeries_family.Add({{"reason", std::string(reason)}}).Increment();
}

void MetricsRegistry::OnCommandBatch(const std::map<std::string, uint64_t>& applied_by_op,
                                     const std::map<std::string, uint64_t>& rejected_by_reason,
                                     int64_t apply_latency_ms) {
  uint64_t applied = 0;
  {
    std::lock_guard<std::mutex> lock(m_->label_mu);
    for (const auto& [op, n] : applied_by_op) {
      if (n == 0) continue;
      applied += n;
      const std::string label = m_->CappedLabel(m_->known_ops, kMaxOpLabels, op);
      m_->CommandCounter({{"op", label}, {"status", "applied"}}).Increment(static_cast<double>(n));
    }
    for (const auto& [reason, n] : rejected_by_reason) {
      if (n == 0) continue;
      const std::string label = m_->CappedLabel(m_->known_reasons, kMaxReasonLabels, reason);
      m_->CommandCounter({{"status", "rejected"}, {"reason", label}}).Increment(static_cast<double>(n));
    }
  }
  m_->command_batches.Increment();
  if (applied > 0) m_->command_apply.Observe(Seconds(apply_latency_ms));
}

void MetricsRegistry::SetConsumerLag(int64_t messages) {
  m_->consumer_lag.Set(messages < 0 ? std::numeric_limits<double>::quiet_NaN()
                                    : static_cast<double>(messages));
}

void MetricsRegistry::SetProducerQueue(int64_t messages) {
  m_->producer_queue.Set(static_cast<double>(std::max<int64_t>(messages, 0)));
}

void MetricsRegistry::SetReady(bool ready) { m_->ready.Set(ready ? 1 : 0); }

void MetricsRegistry::SetCatchUpProducerQueue(int64_t messages) {
  m_->catch_up_producer_queue.Set(static_cast<double>(std::max<int64_t>(messages, 0)));
}

void MetricsRegistry::OnCatchUpDebt(int64_t owed_minutes) {
  m_->catch_up_debt.Set(static_cast<double>(std::max<int64_t>(owed_minutes, 0)));
}

void MetricsRegistry::OnCatchUpRate(int64_t per_second) {
  m_->catch_up_rate.Set(static_cast<double>(std::max<int64_t>(per_second, 0)));
}

void MetricsRegistry::SetSampler(Sampler sampler) {
  std::lock_guard<std::mutex> lock(m_->sampler_mu);
  m_->sampler = std::move(sampler);
}

std::string MetricsRegistry::Serialize() {
  {
    // Held while sampling so that concurrent scrapes do not run the sampler concurrently.
    std::lock_guard<std::mutex> lock(m_->sampler_mu);
    if (m_->sampler) m_->sampler(*this);
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, m_->registry->Collect());
  return out.str();
}

prometheus::Registry& MetricsRegistry::registry() { return *m_->registry; }

}  // namespace belfry
