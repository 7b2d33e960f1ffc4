// raw: a plain librdkafka producer, configured like belfry's trigger sink, sending N
// trigger-shaped messages of ~B bytes and waiting for every acknowledgement. Its rate is the
// output-side physical limit of this machine and broker, the yardstick for `burst` and `verify`.
#include <fmt/format.h>

#include <atomic>
#include <chrono>

#include "core/trigger_encoder.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/kafka_admin.h"
#include "loadtest/latency_histogram.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/loadtest_producer.h"
#include "loadtest/progress_meter.h"
#include "loadtest/workload.h"

namespace belfry::loadtest {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr size_t kDistinctDetails = 1024;

}  // namespace

nlohmann::ordered_json RunRaw(const CommonOptions& common, const RawOptions& options,
                              const std::string& label) {
  std::vector<std::string> topics;
  if (options.topics <= 1) {
    topics.push_back(options.topic);
  } else {
    for (int32_t k = 0; k < options.topics; ++k) topics.push_back(fmt::format("{}.{}", options.topic, k));
  }
  EnsureTopics(common.brokers, topics, options.partitions);
  const std::map<std::string, int32_t> partitions = ListTopicPartitions(common.brokers);
  int64_t total_partitions = 0;
  for (const std::string& t : topics) total_partitions += partitions.count(t) ? partitions.at(t) : 0;

  // Trigger-shaped values: the envelope belfry writes around ~B bytes in total.
  TriggerView probe;
  probe.job_id = "lt-raw-0000000000";
  probe.details_json = "{}";
  probe.interval_minutes = 1;
  probe.scheduled_for_ms = WallClockMs();
  std::string encoded;
  EncodeTriggerValue(probe, &encoded);
  const size_t details_bytes = options.size > encoded.size() ? options.size - encoded.size() + 2 : 2;
  std::vector<std::string> details;
  for (size_t i = 0; i < kDistinctDetails; ++i) details.push_back(MakeJobDetails(i * 7919, details_bytes));

  LatencyHistogram ack_latency;  // written by the poll thread only, read after Flush
  std::atomic<int64_t> last_ack_ns{0};
  ProgressMeter meter(label);
  ProgressCounter* produced = meter.AddCounter("produced", options.messages);
  ProgressCounter* acked = meter.AddCounter("acked", options.messages);
  ProducerSettings settings;
  settings.brokers = common.brokers;
  settings.client_id = "belfry-loadtest-raw";
  settings.overrides = common.kafka_properties;
  int64_t value_bytes = 0;
  int64_t first_ns = 0;
  int64_t failed = 0;
  std::string first_error;
  {
    LoadtestProducer producer(settings, [&](const Delivery& d) {
      const int64_t now = SteadyNs();
      ack_latency.Record((now - static_cast<int64_t>(d.opaque)) / 1'000'000);
      last_ack_ns.store(now, std::memory_order_relaxed);
      acked->Add();
    });
    meter.Start();
    std::string value;
    std::string id;
    const EpochMs base_ms = WallClockMs() / 500 * 500;
    first_ns = SteadyNs();
    for (int64_t i = 0; i < options.messages; ++i) {
      id = fmt::format("lt-raw-{:010d}", i);
      TriggerView t;
      t.job_id = id;
      t.details_json = details[static_cast<size_t>(i) % kDistinctDetails];
      t.interval_minutes = 1;
      t.scheduled_for_ms = base_ms + (i % 120) * 500;
      EncodeTriggerValue(t, &value);
      const std::string scheduled_for = ScheduledForHeader(t.scheduled_for_ms);
      value_bytes += static_cast<int64_t>(value.size());
      producer.Produce(topics[static_cast<size_t>(i) % topics.size()], id, value,
                       {{"belfry-job-id", id}, {"belfry-scheduled-for", scheduled_for}},
                       static_cast<uint64_t>(SteadyNs()));
      produced->Add();
    }
    const int outstanding = producer.Flush(120'000);
    failed = producer.failed() + outstanding;
    first_error = producer.first_error();
    meter.Stop();
  }

  const double seconds = static_cast<double>(last_ack_ns.load() - first_ns) / 1e9;
  nlohmann::ordered_json j;
  j["mode"] = "raw";
  j["host"] = HostSnapshot();
  j["messages"] = options.messages;
  j["failed"] = failed;
  if (!first_error.empty()) j["first_error"] = first_error;
  j["value_bytes_avg"] = options.messages > 0 ? value_bytes / options.messages : 0;
  j["topics"] = topics.size() == 1
                    ? nlohmann::ordered_json(topics[0])
                    : nlohmann::ordered_json(fmt::format("{}.0..{}", options.topic, topics.size() - 1));
  j["partitions"] = total_partitions;
  j["seconds"] = seconds;
  j["msgs_per_s"] = seconds > 0 ? static_cast<double>(options.messages) / seconds : 0;
  j["msgs_per_min"] = j["msgs_per_s"].get<double>() * 60;
  j["mb_per_s"] = seconds > 0 ? static_cast<double>(value_bytes) / 1048576.0 / seconds : 0;
  j["ack_latency"] = ack_latency.Summary();
  nlohmann::ordered_json producer_settings;
  for (const auto& [key, value] : TriggerSinkLikeProperties(settings)) {
    if (key != "bootstrap.servers" && key != "client.id") producer_settings[key] = value;
  }
  j["producer"] = producer_settings;
  const GnuplotPlotter plotter(options.plot_prefix);
  nlohmann::ordered_json plots = nlohmann::ordered_json::array();
  for (const std::string& path :
       {plotter.Throughput("throughput", label + ": acknowledged messages per second", "messages/s",
                           {{"acked", meter.PerSecond(acked)}, {"produced", meter.PerSecond(produced)}}),
        plotter.Histogram("ack-latency", label + ": produce -> ack latency", "ms", ack_latency)}) {
    if (!path.empty()) plots.push_back(path);
  }
  if (!plots.empty()) j["plots"] = plots;
  return j;
}

void RegisterRawMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  auto options = std::make_shared<RawOptions>();
  CLI::App* sub = app.add_subcommand("raw", "plain librdkafka producer at full speed: the output-side limit");
  AddCommonOptions(sub, common);
  sub->add_option("--messages", options->messages, "messages to send")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--size", options->size, "bytes per message value (trigger-shaped JSON)")
      ->capture_default_str();
  sub->add_option("--topic", options->topic, "topic (or prefix, with --topics > 1)")->capture_default_str();
  sub->add_option("--topics", options->topics, "spread over TOPIC.0 .. TOPIC.(K-1)")->capture_default_str();
  sub->add_option("--partitions", options->partitions, "partitions of topics this run creates")
      ->capture_default_str();
  sub->add_option("--plot", options->plot_prefix, "write PREFIX-throughput.png and PREFIX-ack-latency.png");
  sub->callback([common, options, run] {
    *run = [common, options] {
      const nlohmann::ordered_json j = RunRaw(*common, *options, "raw");
      fmt::print("{}\n", j.dump(2));
      return j["failed"].get<int64_t>() == 0 ? 0 : 1;
    };
  });
}

}  // namespace belfry::loadtest
