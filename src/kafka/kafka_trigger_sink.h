// KafkaTriggerSink: the TriggerSink that produces triggers to Kafka through one shared
// idempotent producer (acks=all), served by a dedicated poll thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "belfry/clock.h"
#include "belfry/config.h"
#include "belfry/status.h"
#include "belfry/trigger_sink.h"

namespace belfry {

struct KafkaTriggerSinkOptions {
  std::string client_id = "belfry-triggers";
  // Upper bound on one trigger's delivery, retries included (librdkafka message.timeout.ms).
  int64_t message_timeout_ms = 30000;
  // How long a topic the broker does not know stays queued before its triggers fail as a record
  // error (librdkafka topic.metadata.propagation.max.ms). Reached only when auto-creation is off.
  int64_t unknown_topic_wait_ms = 10000;
  int32_t linger_ms = 5;
  int64_t batch_size_bytes = 1024 * 1024;
  std::string compression = "lz4";
  // The producer queue's bounds: a full queue makes Add() wait, it never drops. Unbounded, a
  // 5M-job burst queued 382 MB (BENCHMARKS.md); these keep a node's peak RSS near 150 MB.
  int64_t queue_max_messages = 100'000;
  int64_t queue_max_kbytes = 64 * 1024;
  // How long the destructor lets queued triggers drain before purging them.
  int64_t close_timeout_ms = 10000;
  // Finish() returns Retryable if the delivery reports have not all arrived within
  // message_timeout_ms + finish_margin_ms (a safety net; librdkafka reports every message).
  int64_t finish_margin_ms = 10000;
  // If set, called from the poll thread for every acknowledged trigger with its scheduled-for
  // time (e.g. to record lateness). Must be thread-safe and quick.
  std::function<void(EpochMs scheduled_for_ms)> on_delivered;
};

// Each trigger is one message to its job's topic: key = TriggerView::key, headers
// belfry-job-id and belfry-scheduled-for, value = EncodeTriggerValue. A trigger is never
// dropped: when the producer queue is full, Add() blocks until there is room.
//
// If the producer hits a fatal error (possible with idempotence, e.g. after broker data loss),
// the poll thread replaces it with a new one; batches in flight fail with Retryable.
//
// Thread-safe. REQUIRES: every batch is destroyed before the sink.
class KafkaTriggerSink final : public TriggerSink {
 public:
  class Impl;

  // Invalid("kafka_config", ...) if a librdkafka property is rejected.
  static StatusOr<std::unique_ptr<KafkaTriggerSink>> Create(const KafkaConfig& config,
                                                            KafkaTriggerSinkOptions options = {});
  // Flushes for up to close_timeout_ms, purges what is left, and joins the poll thread.
  ~KafkaTriggerSink() override;
  KafkaTriggerSink(const KafkaTriggerSink&) = delete;
  KafkaTriggerSink& operator=(const KafkaTriggerSink&) = delete;

  std::unique_ptr<TriggerBatch> NewBatch() override;

  // Metrics. Cheap; callable from any thread.
  uint64_t triggers_sent_total() const;    // acknowledged by the broker
  uint64_t triggers_failed_total() const;  // failed delivery or refused by produce()
  int64_t queue_length() const;            // producer outq_len(): unacknowledged messages (and
                                           // in-flight protocol requests)
  uint64_t producer_restarts_total() const;

  // Raises a fatal error on the current producer, as a broker fault would. Testing only.
  void InjectFatalErrorForTesting();

 private:
  explicit KafkaTriggerSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace belfry
