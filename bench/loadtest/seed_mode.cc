// seed: publishes N upsert commands (ids PREFIX0000000000 ...) as fast as the producer takes
// them, then waits until belfry's command-results say every one was applied.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "loadtest/command_outcome.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/job_command_factory.h"
#include "loadtest/kafka_admin.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/loadtest_producer.h"
#include "loadtest/pg_connection.h"
#include "loadtest/progress_meter.h"

namespace belfry::loadtest {
namespace {

struct SeedOptions {
  int64_t jobs = 100'000;
  uint64_t first = 0;
  std::string mix = kDefaultIntervalMix;
  int32_t topics = 16;
  int32_t owners = 8;
  int32_t partitions = 4;
  std::string id_prefix = "lt-";
  std::string topic_prefix = "lt.triggers.";
  size_t details_bytes = 200;
  std::string offsets = "random";
  double cron_fraction = 0;
  int32_t cron_zones = static_cast<int32_t>(kCronZones.size());
  std::string cron_zone;  // non-empty: every cron job in this zone
  std::string timeout = "10m";
  bool no_wait = false;
  uint64_t seed = 1;
  std::string plot_prefix;
};

// Delivery opaque of a cron job's upsert, so the summary can count the cron jobs published.
constexpr uint64_t kCronOpaque = 1;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int RunSeed(const CommonOptions& common, const SeedOptions& options) {
  JobCommandSpec spec;
  spec.id_prefix = options.id_prefix;
  spec.topic_prefix = options.topic_prefix;
  spec.topics = options.topics;
  spec.owners = options.owners;
  spec.details_bytes = options.details_bytes;
  spec.explicit_offsets = options.offsets == "random";
  spec.mix = IntervalMix::Parse(options.mix);
  spec.cron_fraction = options.cron_fraction;
  spec.cron_zones = options.cron_zones;
  spec.cron_zone = options.cron_zone;
  const JobCommandFactory factory(spec);
  int64_t cron_jobs = 0;
  for (int64_t i = 0; i < options.jobs && options.cron_fraction > 0; ++i) {
    cron_jobs += factory.IsCron(options.first + static_cast<uint64_t>(i)) ? 1 : 0;
  }
  const int64_t timeout_ms = ParseDurationMs(options.timeout);

  EnsureTopics(common.brokers, factory.Topics(), options.partitions);
  // The reader fixes its starting offsets before the first command is published.
  LiveTopicReader results(
      LiveTopicReaderOptions{common.brokers, "^" + RegexEscape(common.results_topic) + "$", {}});

  ProgressMeter meter("seed");
  ProgressCounter* published = meter.AddCounter("published", options.jobs);
  ProgressCounter* applied = options.no_wait ? nullptr : meter.AddCounter("applied", options.jobs);
  std::atomic<int64_t> last_ack_ns{0};
  std::atomic<int64_t> cron_published{0};
  ProducerSettings settings;
  settings.brokers = common.brokers;
  settings.client_id = "belfry-loadtest-seed";
  settings.overrides = common.kafka_properties;
  LoadtestProducer producer(settings, [&](const Delivery& d) {
    if (d.ok) published->Add();
    if (d.ok && d.opaque == kCronOpaque) cron_published.fetch_add(1, std::memory_order_relaxed);
    last_ack_ns.store(SteadyNs(), std::memory_order_relaxed);
  });

  meter.Start();
  const int64_t start_ns = SteadyNs();
  std::atomic<bool> publishing{true};
  std::thread publisher([&] {
    std::mt19937_64 rng(options.seed);
    for (int64_t i = 0; i < options.jobs; ++i) {
      const uint64_t n = options.first + static_cast<uint64_t>(i);
      const std::string id = factory.Id(n);
      producer.Produce(common.commands_topic, id, factory.Upsert(n, 0, false, rng), {},
                       factory.IsCron(n) ? kCronOpaque : 0);
    }
    producer.Flush(300'000);
    publishing.store(false);
  });

  std::vector<bool> seen(static_cast<size_t>(options.jobs), false);
  int64_t applied_count = 0;
  int64_t rejected = 0;
  std::string first_rejection;
  int64_t last_applied_ns = 0;
  int64_t publish_done_ns = 0;
  CommandOutcomeParser parser;
  while (true) {
    if (publish_done_ns == 0 && !publishing.load()) publish_done_ns = SteadyNs();
    if (options.no_wait) {
      if (publish_done_ns != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (applied_count >= options.jobs) break;
    if (publish_done_ns != 0 && SteadyNs() - publish_done_ns > timeout_ms * 1'000'000) break;
    results.Poll(200, [&](const LiveRecord& r) {
      CommandOutcomeView o;
      uint64_t n = 0;
      if (r.null_value || !parser.Parse(r.value, &o) || !factory.NumberOf(o.id, &n)) return;
      if (n < options.first || n >= options.first + static_cast<uint64_t>(options.jobs)) return;
      if (!o.applied) {
        if (rejected++ == 0) first_rejection = std::string(r.value);
        return;
      }
      const size_t k = static_cast<size_t>(n - options.first);
      if (seen[k]) return;
      seen[k] = true;
      ++applied_count;
      applied->Add();
      last_applied_ns = SteadyNs();
    });
  }
  publisher.join();
  meter.Stop();

  nlohmann::ordered_json j;
  j["mode"] = "seed";
  j["host"] = HostSnapshot();
  j["jobs"] = options.jobs;
  j["id_range"] = fmt::format("{}..{}", factory.Id(options.first),
                              factory.Id(options.first + static_cast<uint64_t>(options.jobs) - 1));
  j["interval_mix"] = spec.mix.ToString();
  // Cron jobs at their mix's mean over a week: the rate of a given minute varies around it.
  j["expected_triggers_per_min"] =
      static_cast<double>(options.jobs - cron_jobs) * spec.mix.FiringsPerJobMinute() +
      static_cast<double>(cron_jobs) * CronMixFiringsPerJobMinute();
  j["topics"] = fmt::format("{}0..{}", options.topic_prefix, options.topics - 1);
  j["offsets"] = options.offsets;
  j["cron_fraction"] = options.cron_fraction;
  if (cron_jobs > 0) {
    j["cron_zones"] = nlohmann::ordered_json::array();
    if (!options.cron_zone.empty()) {
      j["cron_zones"].push_back(options.cron_zone);
    } else {
      for (int32_t z = 0; z < options.cron_zones; ++z)
        j["cron_zones"].push_back(kCronZones[static_cast<size_t>(z)]);
    }
  }
  j["cron_jobs"] = cron_jobs;
  j["published"] = published->Get();
  j["cron_published"] = cron_published.load();
  j["publish_failed"] = producer.failed();
  const double publish_s = static_cast<double>(last_ack_ns.load() - start_ns) / 1e9;
  j["publish_seconds"] = publish_s;
  j["published_per_s"] = publish_s > 0 ? static_cast<double>(published->Get()) / publish_s : 0;
  if (!options.no_wait) {
    const double applied_s = static_cast<double>(last_applied_ns - start_ns) / 1e9;
    j["applied"] = applied_count;
    j["rejected"] = rejected;
    if (!first_rejection.empty()) j["first_rejection"] = first_rejection;
    j["applied_seconds"] = applied_s;
    j["applied_per_s"] = applied_s > 0 ? static_cast<double>(applied_count) / applied_s : 0;
    j["applied_per_min"] = j["applied_per_s"].get<double>() * 60;
    j["timed_out"] = applied_count < options.jobs;
  }
  try {
    PgConnection conn(common.database_url, "");
    j["rows_in_jobs"] = std::stoll(
        conn.ExecParams("SELECT count(*) FROM jobs WHERE id BETWEEN $1 AND $2",
                        {factory.Id(options.first),
                         factory.Id(options.first + static_cast<uint64_t>(options.jobs) - 1)})[0][0]);
  } catch (const std::exception& e) {
    j["rows_in_jobs_error"] = e.what();
  }
  const GnuplotPlotter plotter(options.plot_prefix);
  std::vector<ThroughputSeries> series = {{"published (acked by Kafka)", meter.PerSecond(published)}};
  if (applied != nullptr) series.push_back({"applied by belfry", meter.PerSecond(applied)});
  const std::string plot =
      plotter.Throughput("throughput", "seed: commands per second", "commands/s", series);
  if (!plot.empty()) j["plots"] = {plot};
  fmt::print("{}\n", j.dump(2));
  if (options.no_wait) return producer.failed() == 0 ? 0 : 1;
  return applied_count == options.jobs && rejected == 0 ? 0 : 1;
}

}  // namespace

void RegisterSeedMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  auto options = std::make_shared<SeedOptions>();
  CLI::App* sub = app.add_subcommand("seed", "publish N upsert commands and wait until belfry applied them");
  AddCommonOptions(sub, common);
  sub->add_option("--jobs", options->jobs, "commands (jobs) to publish")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--first", options->first, "number of the first job id")->capture_default_str();
  sub->add_option("--mix", options->mix, "interval mix INTERVAL:WEIGHT,...")->capture_default_str();
  sub->add_option("--topics", options->topics, "trigger topics lt.triggers.0 .. K-1")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--owners", options->owners, "distinct owners")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--partitions", options->partitions, "partitions of trigger topics this run creates")
      ->capture_default_str();
  sub->add_option("--id-prefix", options->id_prefix, "job id prefix")->capture_default_str();
  sub->add_option("--topic-prefix", options->topic_prefix, "trigger topic prefix")->capture_default_str();
  sub->add_option("--details-bytes", options->details_bytes, "jobDetails size")->capture_default_str();
  sub->add_option("--offsets", options->offsets, "random: explicit random offsetMinutes; auto: belfry's rule")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "auto"}));
  sub->add_option("--cron-fraction", options->cron_fraction,
                  "fraction of the jobs that are cron jobs (chosen by a hash of the job number)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--cron-zones", options->cron_zones,
                  "cron jobs use the first N zones of the harness's list")
      ->capture_default_str()
      ->check(CLI::Range(1, static_cast<int32_t>(kCronZones.size())));
  sub->add_option("--cron-zone", options->cron_zone,
                  "put every cron job in this one IANA zone instead of the list (overrides --cron-zones)");
  sub->add_option("--timeout", options->timeout, "how long to wait for outcomes after publishing")
      ->capture_default_str();
  sub->add_flag("--no-wait", options->no_wait, "publish only; do not wait for outcomes");
  sub->add_option("--seed", options->seed, "random seed")->capture_default_str();
  sub->add_option("--plot", options->plot_prefix, "write PREFIX-throughput.png");
  sub->callback([common, options, run] { *run = [common, options] { return RunSeed(*common, *options); }; });
}

}  // namespace belfry::loadtest
