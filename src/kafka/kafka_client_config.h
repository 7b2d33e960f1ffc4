// KafkaClientConfig: librdkafka configurations built from belfry::KafkaConfig, and the event
// callback that routes librdkafka's logs and errors to spdlog. Private to src/kafka.
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "belfry/config.h"
#include "belfry/status.h"

namespace belfry {

// The group.instance.id of a node's member of one group (static membership, KIP-345): `node_id`
// with every character Kafka does not allow in it ([A-Za-z0-9._-]) replaced by '_', then
// "-<role>", at most 249 characters. Empty when `node_id` is: dynamic membership.
std::string GroupInstanceId(std::string_view node_id, std::string_view role);

// Role-specific librdkafka settings, applied in order.
using KafkaSettings = std::vector<std::pair<std::string, std::string>>;

// Fetch and buffer settings shared by belfry's consumers (commands, executions), appended to
// each one's role settings (so `kafka.properties` still overrides them):
// - queued.max.messages.kbytes 16384 and fetch.max.bytes 4 MiB: librdkafka's defaults let one
//   consumer prefetch 64 MiB and receive fetch responses of up to 50 MB. Under a command flood
//   applied while firing 3M triggers/min, a node peaked at 278-289 MB with the 50 MB fetches and
//   249 MB with 4 MiB ones (BENCHMARKS.md, third session, "Memory"). A 4 MiB prefetch reached
//   171 MB, but paced runs then showed a standing 1-2 s command delay in half the runs
//   (fourth session). The cause (fifth session, debug=fetch): librdkafka 2.0 stops fetching
//   when the prefetch is full and looks again only ~1 s later (librdkafka issue #2879;
//   fetch.queue.backoff.ms, which shortens that, came in 2.1). So once a node falls slightly
//   behind, it takes in at most one prefetch per second: 4 MiB is ~14k commands/s, less than
//   1M/min, and it never catches up. The prefetch must hold well over a second of commands at
//   the rate a node must sustain; 16 MiB is ~55k/s.
// - fetch.min.bytes 128 KiB and fetch.wait.max.ms 20: a fetch waits for 128 KiB (or 20 ms)
//   instead of returning as soon as one message is there. At 1.08M commands/min the default
//   (1 byte) had the broker answer a stream of tiny fetches: broker 0.53-0.56 cores and belfry
//   0.25 against 0.36-0.39 and 0.16 with these; in 60-s runs the node fell behind (p99
//   1.8-3.4 s) and with these it kept up (p99 0.68-0.70 s) (BENCHMARKS.md, fourth session,
//   "Commands"). Costs at most 20 ms when commands are sparse.
inline const KafkaSettings& ConsumerFetchSettings() {
  static const KafkaSettings settings = {
      {"queued.max.messages.kbytes", "16384"},
      {"fetch.max.bytes", "4194304"},
      {"fetch.min.bytes", "131072"},
      {"fetch.wait.max.ms", "20"},
  };
  return settings;
}

// Builds a global librdkafka config. Order: bootstrap.servers and client.id, then `settings`
// (belfry's defaults for the client's role), then config.properties last, so an operator's
// pass-through map can override anything. Every failed set() is Invalid("kafka_config", ...)
// naming the key. `event_cb` (optional) must outlive every client created from the config.
StatusOr<std::unique_ptr<RdKafka::Conf>> BuildKafkaConf(const KafkaConfig& config,
                                                        const std::string& client_id,
                                                        const KafkaSettings& settings,
                                                        RdKafka::EventCb* event_cb = nullptr);

struct RdKafkaConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using RdKafkaConfPtr = std::unique_ptr<rd_kafka_conf_t, RdKafkaConfDeleter>;

struct RdKafkaDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using RdKafkaPtr = std::unique_ptr<rd_kafka_t, RdKafkaDeleter>;

// The same for the C API (used by the Admin API), with librdkafka's logs routed to spdlog.
StatusOr<RdKafkaConfPtr> BuildKafkaCConf(const KafkaConfig& config, const std::string& client_id,
                                         const KafkaSettings& settings);

// "<pid>-<random>-<counter>": for the group ids of readers that never commit (each must be
// alone in its group). Thread-safe.
std::string UniqueGroupSuffix();

// Routes librdkafka LOG events to spdlog at the matching level, ERROR events at WARN (ERROR
// when fatal), and calls `on_error` (if set) for every ERROR event. Thread-safe; must outlive
// the client it is registered with.
class KafkaEventLogger final : public RdKafka::EventCb {
 public:
  explicit KafkaEventLogger(std::string client_id, std::function<void(RdKafka::Event&)> on_error = nullptr)
      : client_id_(std::move(client_id)), on_error_(std::move(on_error)) {}
  KafkaEventLogger(const KafkaEventLogger&) = delete;
  KafkaEventLogger& operator=(const KafkaEventLogger&) = delete;

  void event_cb(RdKafka::Event& event) override;

 private:
  const std::string client_id_;
  const std::function<void(RdKafka::Event&)> on_error_;
};

}  // namespace belfry
