// crud: publishes M mixed create/update/delete commands (as fast as Kafka takes them, or at
// --rate) and measures how fast belfry applies them durably: applied commands per second and
// the command -> outcome latency (outcome receive time - send time). A command is matched to
// its outcome by (partition, offset): the delivery report gives the command's position and the
// outcome record repeats it.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "loadtest/command_outcome.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/job_command_factory.h"
#include "loadtest/kafka_admin.h"
#include "loadtest/latency_histogram.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/loadtest_producer.h"
#include "loadtest/progress_meter.h"
#include "loadtest/weight_list.h"

namespace belfry::loadtest {
namespace {

struct CrudOptions {
  int64_t commands = 100'000;
  std::string ops = "create:50,update:30,delete:20";
  std::string mix = "1440:1";
  std::string id_prefix = "crud-";
  std::string topic_prefix = "lt.crud.";
  int32_t topics = 4;
  int32_t partitions = 4;
  size_t details_bytes = 200;
  double rate = 0;
  int32_t warmup_s =
      0;  // commands sent in the first warmup_s seconds are left out of the steady-state figure
  std::string timeout = "5m";
  bool cleanup = false;
  uint64_t seed = 1;
  std::string plot_prefix;
};

struct OpWeights {
  double create = 50;
  double update = 30;
  double remove = 20;
};

OpWeights ParseOps(const std::string& text) {
  OpWeights w{0, 0, 0};
  for (const NamedWeight& e : ParseWeightList(text, "--ops", {"create", "update", "delete"})) {
    (e.name == "create" ? w.create : e.name == "update" ? w.update : w.remove) = e.weight;
  }
  if (w.create <= 0) throw std::invalid_argument("--ops needs a positive create weight");
  return w;
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Sends and outcomes meet here: whichever of the two arrives second records the latency, in the
// whole run's histogram, in the one of the second (since `start_ms`) the command was sent in, and,
// if it was sent `warmup_ms` or more after `start_ms`, in the steady-state histogram.
class LatencyMatcher final {
 public:
  LatencyMatcher(EpochMs start_ms, int64_t warmup_ms) : start_ms_(start_ms), warmup_ms_(warmup_ms) {}

  void OnSent(uint64_t key, EpochMs sent_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = early_outcomes_.find(key);
    if (it == early_outcomes_.end()) {
      sent_.emplace(key, sent_ms);
      return;
    }
    RecordLocked(sent_ms, it->second);
    early_outcomes_.erase(it);
  }
  void OnOutcome(uint64_t key, EpochMs received_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = sent_.find(key);
    if (it == sent_.end()) {
      early_outcomes_.emplace(key, received_ms);
      return;
    }
    RecordLocked(it->second, received_ms);
    sent_.erase(it);
  }
  LatencyHistogram Histogram() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latency_;
  }
  LatencyHistogram SteadyHistogram() const {
    std::lock_guard<std::mutex> lock(mu_);
    return steady_;
  }
  // [{"count", "p50_ms", "p99_ms", "max_ms", ..., "second": s}] by the second the commands were sent.
  nlohmann::ordered_json BySecond() const {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& [second, h] : by_second_) {
      nlohmann::ordered_json row = h.Summary();
      row["second"] = second;
      out.push_back(std::move(row));
    }
    return out;
  }
  size_t unmatched_outcomes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return early_outcomes_.size();
  }

 private:
  void RecordLocked(EpochMs sent_ms, EpochMs outcome_ms) {
    const int64_t latency_ms = outcome_ms - sent_ms;
    const int64_t since_start_ms = sent_ms - start_ms_;
    latency_.Record(latency_ms);
    by_second_[std::max<int64_t>(0, since_start_ms / 1000)].Record(latency_ms);
    if (since_start_ms >= warmup_ms_) steady_.Record(latency_ms);
  }

  const EpochMs start_ms_;
  const int64_t warmup_ms_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, EpochMs> sent_;
  std::unordered_map<uint64_t, EpochMs> early_outcomes_;
  LatencyHistogram latency_;
  LatencyHistogram steady_;
  std::map<int64_t, LatencyHistogram> by_second_;
};

int RunCrud(const CommonOptions& common, const CrudOptions& options) {
  JobCommandSpec spec;
  spec.id_prefix = options.id_prefix;
  spec.topic_prefix = options.topic_prefix;
  spec.topics = options.topics;
  spec.details_bytes = options.details_bytes;
  spec.mix = IntervalMix::Parse(options.mix);
  const JobCommandFactory factory(spec);
  const OpWeights weights = ParseOps(options.ops);
  const int64_t timeout_ms = ParseDurationMs(options.timeout);

  EnsureTopics(common.brokers, factory.Topics(), options.partitions);
  LiveTopicReader results(
      LiveTopicReaderOptions{common.brokers, "^" + RegexEscape(common.results_topic) + "$", {}});

  ProgressMeter meter("crud");
  ProgressCounter* published = meter.AddCounter("published", options.commands);
  ProgressCounter* outcomes = meter.AddCounter("outcomes", options.commands);
  LatencyMatcher matcher(WallClockMs(), int64_t{options.warmup_s} * 1000);
  std::atomic<int64_t> last_ack_ns{0};
  ProducerSettings settings;
  settings.brokers = common.brokers;
  settings.client_id = "belfry-loadtest-crud";
  settings.overrides = common.kafka_properties;
  LoadtestProducer producer(settings, [&](const Delivery& d) {
    if (!d.ok) return;
    matcher.OnSent(CommandPositionKey(d.partition, d.offset), static_cast<EpochMs>(d.opaque));
    published->Add();
    last_ack_ns.store(SteadyNs(), std::memory_order_relaxed);
  });

  int64_t counts[3] = {0, 0, 0};  // create, update, delete
  std::vector<uint64_t> live;
  meter.Start();
  const int64_t start_ns = SteadyNs();
  std::atomic<bool> publishing{true};
  std::thread publisher([&] {
    std::mt19937_64 rng(options.seed);
    std::uniform_real_distribution<double> pick(0, weights.create + weights.update + weights.remove);
    uint64_t next = 0;
    for (int64_t i = 0; i < options.commands; ++i) {
      if (options.rate > 0) {
        const int64_t due = start_ns + static_cast<int64_t>(static_cast<double>(i) * 1e9 / options.rate);
        const int64_t wait = due - SteadyNs();
        if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
      }
      const double r = pick(rng);
      uint64_t n = 0;
      std::string value;
      if (live.empty() || r < weights.create) {
        n = next++;
        live.push_back(n);
        value = factory.Upsert(n, 0, false, rng);
        ++counts[0];
      } else {
        const size_t idx = rng() % live.size();
        n = live[idx];
        if (r < weights.create + weights.update) {
          value = factory.Upsert(n, static_cast<uint64_t>(i), rng() % 2 == 0, rng);
          ++counts[1];
        } else {
          live[idx] = live.back();
          live.pop_back();
          value = factory.Delete(n);
          ++counts[2];
        }
      }
      const std::string id = factory.Id(n);
      const EpochMs sent_ms = WallClockMs();
      const std::string sent_text = std::to_string(sent_ms);
      producer.Produce(common.commands_topic, id, value, {{"belfry-loadtest-sent-ms", sent_text}},
                       static_cast<uint64_t>(sent_ms));
    }
    producer.Flush(300'000);
    publishing.store(false);
  });

  int64_t applied = 0;
  int64_t rejected = 0;
  std::string first_rejection;
  int64_t last_outcome_ns = 0;
  int64_t publish_done_ns = 0;
  CommandOutcomeParser parser;
  while (outcomes->Get() < options.commands) {
    if (publish_done_ns == 0 && !publishing.load()) publish_done_ns = SteadyNs();
    if (publish_done_ns != 0 && SteadyNs() - publish_done_ns > timeout_ms * 1'000'000) break;
    results.Poll(200, [&](const LiveRecord& r) {
      CommandOutcomeView o;
      uint64_t n = 0;
      if (r.null_value || !parser.Parse(r.value, &o) || !factory.NumberOf(o.id, &n)) return;
      matcher.OnOutcome(CommandPositionKey(o.partition, o.offset), r.received_ms);
      if (o.applied) {
        ++applied;
      } else if (rejected++ == 0) {
        first_rejection = std::string(r.value);
      }
      outcomes->Add();
      last_outcome_ns = SteadyNs();
    });
  }
  publisher.join();
  meter.Stop();
  const int64_t published_count = published->Get();
  const int64_t publish_end_ns = last_ack_ns.load();

  if (options.cleanup && !live.empty()) {
    fmt::print(stderr, "crud: deleting the {} jobs it left behind ...\n", live.size());
    for (const uint64_t n : live)
      producer.Produce(common.commands_topic, factory.Id(n), factory.Delete(n), {});
    producer.Flush(300'000);
  }

  const LatencyHistogram latency = matcher.Histogram();
  nlohmann::ordered_json j;
  j["mode"] = "crud";
  j["host"] = HostSnapshot();
  j["commands"] = options.commands;
  j["creates"] = counts[0];
  j["updates"] = counts[1];
  j["deletes"] = counts[2];
  j["rate_limit_per_s"] = options.rate;
  j["published"] = published_count;
  const double publish_s = static_cast<double>(publish_end_ns - start_ns) / 1e9;
  j["published_per_s"] = publish_s > 0 ? static_cast<double>(published_count) / publish_s : 0;
  j["outcomes"] = outcomes->Get();
  j["applied"] = applied;
  j["rejected"] = rejected;
  if (!first_rejection.empty()) j["first_rejection"] = first_rejection;
  const double applied_s = static_cast<double>(last_outcome_ns - start_ns) / 1e9;
  j["applied_seconds"] = applied_s;
  j["applied_per_s"] = applied_s > 0 ? static_cast<double>(applied) / applied_s : 0;
  j["applied_per_min"] = j["applied_per_s"].get<double>() * 60;
  j["command_to_applied"] = latency.Summary();
  if (options.warmup_s > 0) {
    j["warmup_s"] = options.warmup_s;
    j["command_to_applied_after_warmup"] = matcher.SteadyHistogram().Summary();
  }
  j["command_to_applied_by_second"] = matcher.BySecond();
  j["unmatched_outcomes"] = matcher.unmatched_outcomes();
  j["timed_out"] = outcomes->Get() < options.commands;
  j["jobs_left"] = options.cleanup ? 0 : live.size();
  const GnuplotPlotter plotter(options.plot_prefix);
  nlohmann::ordered_json plots = nlohmann::ordered_json::array();
  for (const std::string& path :
       {plotter.Throughput("throughput", "crud: commands per second", "commands/s",
                           {{"published (acked by Kafka)", meter.PerSecond(published)},
                            {"outcomes from belfry", meter.PerSecond(outcomes)}}),
        plotter.Histogram("latency", "crud: command -> applied latency", "ms", latency)}) {
    if (!path.empty()) plots.push_back(path);
  }
  if (!plots.empty()) j["plots"] = plots;
  fmt::print("{}\n", j.dump(2));
  return outcomes->Get() == options.commands && rejected == 0 ? 0 : 1;
}

}  // namespace

void RegisterCrudMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  auto options = std::make_shared<CrudOptions>();
  CLI::App* sub =
      app.add_subcommand("crud", "publish M create/update/delete commands; measure applied/s and latency");
  AddCommonOptions(sub, common);
  sub->add_option("--commands", options->commands, "commands to publish")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--ops", options->ops, "op mix create:W,update:W,delete:W")->capture_default_str();
  sub->add_option("--mix", options->mix, "interval mix of created jobs")->capture_default_str();
  sub->add_option("--id-prefix", options->id_prefix, "job id prefix")->capture_default_str();
  sub->add_option("--topic-prefix", options->topic_prefix, "trigger topic prefix of created jobs")
      ->capture_default_str();
  sub->add_option("--topics", options->topics, "trigger topics of created jobs")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--partitions", options->partitions, "partitions of topics this run creates")
      ->capture_default_str();
  sub->add_option("--details-bytes", options->details_bytes, "jobDetails size")->capture_default_str();
  sub->add_option("--rate", options->rate, "commands per second (0 = as fast as Kafka takes them)")
      ->capture_default_str();
  sub->add_option("--warmup-s", options->warmup_s,
                  "also report command -> applied for the commands sent after the first N seconds "
                  "(command_to_applied_after_warmup); command_to_applied always covers every command")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  sub->add_option("--timeout", options->timeout, "how long to wait for outcomes after publishing")
      ->capture_default_str();
  sub->add_flag("--cleanup", options->cleanup, "afterwards, delete the jobs the run left (not measured)");
  sub->add_option("--seed", options->seed, "random seed")->capture_default_str();
  sub->add_option("--plot", options->plot_prefix, "write PREFIX-throughput.png and PREFIX-latency.png");
  sub->callback([common, options, run] { *run = [common, options] { return RunCrud(*common, *options); }; });
}

}  // namespace belfry::loadtest
