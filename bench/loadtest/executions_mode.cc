// executions: floods belfry's executions topic with realistic execution reports (mostly
// succeeded, some failed so retries are planned, some repeated) and measures how fast belfry
// stores them. "Stored" is read from belfry's own consumer group: the execution consumer commits
// a batch's offsets only after its transaction committed, so the group's committed offsets are
// the durable frontier. From them come the ingestion rate, the lag, and the produced -> stored
// latency of every 8th report (its delivery offset against the first committed offset past it,
// polled every 100 ms). See docs/loadtest.md, "executions".
#include <fmt/format.h>
#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>

#include "loadtest/belfry_process.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/kafka_admin.h"
#include "loadtest/latency_histogram.h"
#include "loadtest/live_topic_reader.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/loadtest_producer.h"
#include "loadtest/metrics_scrape.h"
#include "loadtest/pg_connection.h"
#include "loadtest/progress_meter.h"
#include "loadtest/workload.h"

namespace belfry::loadtest {
namespace {

struct ExecutionsOptions {
  int64_t reports = 1'000'000;  // messages, repeats included
  double rate = 0;              // messages/s; 0 = as fast as the producer takes them
  std::string topic = "belfry.executions";
  std::string group_id = "belfry-executions";
  int32_t partitions = 4;
  int64_t jobs = 100'000;
  std::string id_prefix;  // default: lt-exec-<run start, epoch s>-, so runs never share a report
  double fail_fraction = 0.05;
  double dup_fraction = 0.02;
  int64_t retry_jobs = 1000;  // the first K jobs exist in `jobs` with maxRetries 2
  std::string triggers_topic = "lt.exec.triggers";
  std::string timeout = "10m";
  std::string admin = "127.0.0.1:8080";  // belfry's admin listen address, for /metrics
  int belfry_pid = 0;
  std::string plot_prefix;
};

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::string(v) : fallback;
}

// CPU seconds of each server process (backend) connected to the database, by pid. Only when the
// server runs on this machine; otherwise the pids are not ours to read and the map is empty.
// The backends' sum includes belfry's other sessions (commands, ticks): near idle in these runs.
std::map<int, double> BackendCpu(PgConnection& pg) {
  std::map<int, double> out;
  for (const auto& row : pg.Exec("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                                 " AND pid <> pg_backend_pid()")) {
    const int pid = std::stoi(row[0]);
    if (const double s = ProcessCpuSeconds(pid); s >= 0) out[pid] = s;
  }
  return out;
}

// The sum of the samples of `metric` with `label` in belfry's /metrics at `admin` (host:port),
// or -1 when it cannot be read.
int64_t ScrapeMetric(const std::string& admin, const std::string& metric, const std::string& label) {
  const std::string text = FetchMetricsText(admin);
  return text.empty() ? -1 : SumMetricSamples(text, metric, label);
}

// Per-partition committed offsets of belfry's execution group, read without joining the group.
class CommittedOffsets final {
 public:
  CommittedOffsets(const std::string& brokers, const std::string& group, const std::string& topic,
                   int32_t partitions)
      : topic_(topic) {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    std::string err;
    if (conf->set("bootstrap.servers", brokers, err) != RdKafka::Conf::CONF_OK ||
        conf->set("group.id", group, err) != RdKafka::Conf::CONF_OK ||
        conf->set("enable.auto.commit", "false", err) != RdKafka::Conf::CONF_OK ||
        conf->set("client.id", "belfry-loadtest-executions-lag", err) != RdKafka::Conf::CONF_OK) {
      throw std::runtime_error("lag consumer config: " + err);
    }
    consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
    if (consumer_ == nullptr) throw std::runtime_error("lag consumer: " + err);
    for (int32_t p = 0; p < partitions; ++p) parts_.push_back(RdKafka::TopicPartition::create(topic, p));
  }
  ~CommittedOffsets() {
    RdKafka::TopicPartition::destroy(parts_);
    consumer_->close();
  }
  CommittedOffsets(const CommittedOffsets&) = delete;
  CommittedOffsets& operator=(const CommittedOffsets&) = delete;

  // Committed offset per partition (0 when the group has none). Throws on error.
  std::vector<int64_t> Committed() {
    const RdKafka::ErrorCode err = consumer_->committed(parts_, 5000);
    if (err != RdKafka::ERR_NO_ERROR) throw std::runtime_error("committed offsets: " + RdKafka::err2str(err));
    std::vector<int64_t> out;
    for (const RdKafka::TopicPartition* tp : parts_) out.push_back(std::max<int64_t>(tp->offset(), 0));
    return out;
  }
  // High watermark per partition.
  std::vector<int64_t> Ends() {
    std::vector<int64_t> out;
    for (size_t p = 0; p < parts_.size(); ++p) {
      int64_t low = 0, high = 0;
      const RdKafka::ErrorCode err =
          consumer_->query_watermark_offsets(topic_, static_cast<int32_t>(p), &low, &high, 5000);
      if (err != RdKafka::ERR_NO_ERROR) throw std::runtime_error("watermarks: " + RdKafka::err2str(err));
      out.push_back(high);
    }
    return out;
  }

 private:
  const std::string topic_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::vector<RdKafka::TopicPartition*> parts_;
};

// The n-th distinct report of the run: job n % jobs, one scheduledFor a minute apart per round.
struct ReportShape {
  std::string job_id;
  int64_t scheduled_for_ms = 0;
  bool failed = false;
};

ReportShape ShapeOf(const ExecutionsOptions& o, int64_t n, int64_t base_ms) {
  ReportShape s;
  const int64_t job = n % o.jobs;
  s.job_id = fmt::format("{}{:09d}", o.id_prefix, job);
  s.scheduled_for_ms = base_ms + (n / o.jobs) * 60'000 + (job % 120) * 500;
  s.failed = static_cast<double>(Mix64(static_cast<uint64_t>(n) ^ 0x5eedfa11ULL) % 1'000'000) <
             o.fail_fraction * 1e6;
  return s;
}

std::string EncodeReport(const ReportShape& s, int64_t finished_ms, int64_t n) {
  if (s.failed) {
    return fmt::format(
        R"({{"jobId":"{}","scheduledFor":{},"status":"failed","error":"HTTP 503 from carrier","startedAt":{},)"
        R"("finishedAt":{},"worker":"lt-worker-{}","attempt":0}})",
        s.job_id, s.scheduled_for_ms, finished_ms - 1000, finished_ms, n % 16);
  }
  return fmt::format(
      R"({{"jobId":"{}","scheduledFor":{},"status":"succeeded","startedAt":{},"finishedAt":{},)"
      R"("worker":"lt-worker-{}","attempt":0}})",
      s.job_id, s.scheduled_for_ms, finished_ms - 1000, finished_ms, n % 16);
}

// Publishes upserts of the first `k` jobs (maxRetries 2, daily, trigger topic of their own) and
// waits until they are in `jobs`, so that their failures schedule retries.
void CreateRetryJobs(const CommonOptions& common, const ExecutionsOptions& o, PgConnection& pg) {
  if (o.retry_jobs <= 0) return;
  EnsureTopics(common.brokers, {o.triggers_topic}, 1);
  ProducerSettings settings;
  settings.brokers = common.brokers;
  settings.client_id = "belfry-loadtest-executions-jobs";
  settings.overrides = common.kafka_properties;
  {
    LoadtestProducer producer(settings, nullptr);
    for (int64_t j = 0; j < o.retry_jobs; ++j) {
      const std::string id = fmt::format("{}{:09d}", o.id_prefix, j);
      producer.Produce(common.commands_topic, id,
                       fmt::format(R"({{"op":"upsert","id":"{}","intervalMinutes":1440,"topic":"{}",)"
                                   R"("maxRetries":2,"retryBackoff":{{"initialSeconds":60}}}})",
                                   id, o.triggers_topic),
                       {});
    }
    if (producer.Flush(60'000) != 0 || producer.failed() != 0)
      throw std::runtime_error("publishing the retry jobs failed: " + producer.first_error());
  }
  const std::string count_sql = fmt::format(
      "SELECT count(*) FROM jobs WHERE id >= '{0}{1:09d}' AND id <= '{0}{2:09d}' AND max_retries = 2",
      o.id_prefix, 0, o.retry_jobs - 1);
  for (int i = 0; i < 600; ++i) {
    if (std::stoll(pg.ExecScalar(count_sql)) >= o.retry_jobs) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("the retry jobs did not appear in `jobs` within 60 s (is belfry serving?)");
}

int RunExecutions(const CommonOptions& common, ExecutionsOptions o) {
  if (o.jobs <= 0) throw std::invalid_argument("--jobs must be positive");
  if (o.id_prefix.empty()) o.id_prefix = fmt::format("lt-exec-{}-", WallClockMs() / 1000);
  const int64_t timeout_ms = ParseDurationMs(o.timeout);
  EnsureTopics(common.brokers, {o.topic}, o.partitions);
  const int32_t partitions = ListTopicPartitions(common.brokers).at(o.topic);
  PgConnection pg(common.database_url, "");
  CreateRetryJobs(common, o, pg);

  CommittedOffsets offsets(common.brokers, o.group_id, o.topic, partitions);
  const std::vector<int64_t> ends0 = offsets.Ends();
  const std::vector<int64_t> committed0 = offsets.Committed();
  int64_t initial_lag = 0;
  for (int32_t p = 0; p < partitions; ++p) initial_lag += std::max<int64_t>(0, ends0[p] - committed0[p]);
  if (initial_lag > 0)
    fmt::print(stderr, "executions: belfry's group starts {} reports behind\n", initial_lag);
  const auto retries_scheduled = [&] {
    return ScrapeMetric(o.admin, "belfry_retries_total", "event=\"scheduled\"");
  };
  const int64_t retries0 = retries_scheduled();
  const std::map<int, double> backend_cpu0 = BackendCpu(pg);
  const double belfry_cpu0 = o.belfry_pid > 0 ? ProcessCpuSeconds(o.belfry_pid) : -1;

  // Sampled deliveries, per partition in offset order: (offset, produce time).
  std::mutex mu;
  std::vector<std::deque<std::pair<int64_t, int64_t>>> pending(static_cast<size_t>(partitions));
  LatencyHistogram to_stored;  // monitor thread only until joined
  std::atomic<int64_t> lag{0};
  ProgressMeter meter("executions", [&] { return "lag " + HumanCount(static_cast<double>(lag.load())); });
  ProgressCounter* produced = meter.AddCounter("produced", o.reports);
  ProgressCounter* acked = meter.AddCounter("acked", o.reports);
  ProgressCounter* stored = meter.AddCounter("stored", o.reports);
  int64_t max_lag = 0;
  int64_t max_rss_kb = -1;

  ProducerSettings settings;
  settings.brokers = common.brokers;
  settings.client_id = "belfry-loadtest-executions";
  settings.overrides = common.kafka_properties;
  const int64_t base_ms = WallClockMs() / 60'000 * 60'000;
  std::atomic<bool> producing_done{false};
  std::atomic<bool> stop_monitor{false};
  int64_t first_ns = 0;
  int64_t all_stored_ns = 0;
  int64_t distinct = 0, duplicates = 0, failed_reports = 0;
  std::string first_error;
  int64_t failed_deliveries = 0;

  std::thread monitor([&] {
    int64_t next_rss_ns = 0;
    while (!stop_monitor.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::vector<int64_t> c;
      try {
        c = offsets.Committed();
      } catch (const std::exception& e) {
        fmt::print(stderr, "executions: {}\n", e.what());
        continue;
      }
      const int64_t now = SteadyNs();
      int64_t done = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        for (int32_t p = 0; p < partitions; ++p) {
          done += std::max<int64_t>(0, c[p] - ends0[p]);
          auto& q = pending[static_cast<size_t>(p)];
          while (!q.empty() && q.front().first < c[p]) {
            to_stored.Record((now - q.front().second) / 1'000'000);
            q.pop_front();
          }
        }
      }
      stored->Set(done);
      const int64_t l = acked->Get() - done;
      lag.store(l);
      max_lag = std::max(max_lag, l);
      if (o.belfry_pid > 0 && now >= next_rss_ns) {
        max_rss_kb = std::max(max_rss_kb, CurrentRssKb(o.belfry_pid));
        next_rss_ns = now + 1'000'000'000;
      }
      if (producing_done.load() && done >= acked->Get() && all_stored_ns == 0) all_stored_ns = now;
    }
  });

  {
    LoadtestProducer producer(settings, [&](const Delivery& d) {
      if (!d.ok) return;
      acked->Add();
      if (d.offset % 8 == 0 && d.partition >= 0 && d.partition < partitions) {
        std::lock_guard<std::mutex> lock(mu);
        pending[static_cast<size_t>(d.partition)].emplace_back(d.offset, static_cast<int64_t>(d.opaque));
      }
    });
    meter.Start();
    first_ns = SteadyNs();
    ReportShape last;
    std::string last_value;
    for (int64_t i = 0; i < o.reports; ++i) {
      if (o.rate > 0) {
        const int64_t due_ns = first_ns + static_cast<int64_t>(static_cast<double>(i) * 1e9 / o.rate);
        const int64_t wait = due_ns - SteadyNs();
        if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
      }
      const bool repeat = i > 0 && static_cast<double>(Mix64(static_cast<uint64_t>(i) ^ 0xd0bb1e5ULL) %
                                                       1'000'000) < o.dup_fraction * 1e6;
      if (repeat) {
        ++duplicates;
      } else {
        last = ShapeOf(o, distinct, base_ms);
        last_value = EncodeReport(last, WallClockMs(), distinct);
        if (last.failed) ++failed_reports;
        ++distinct;
      }
      producer.Produce(o.topic, last.job_id, last_value, {}, static_cast<uint64_t>(SteadyNs()));
      produced->Add();
    }
    const int outstanding = producer.Flush(120'000);
    failed_deliveries = producer.failed() + outstanding;
    first_error = producer.first_error();
  }
  const int64_t produced_ns = SteadyNs();
  producing_done.store(true);
  while (all_stored_ns == 0 && (SteadyNs() - produced_ns) / 1'000'000 < timeout_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop_monitor.store(true);
  monitor.join();
  meter.Stop();

  const bool complete = all_stored_ns != 0;
  const double seconds = static_cast<double>((complete ? all_stored_ns : SteadyNs()) - first_ns) / 1e9;
  const double produce_seconds = static_cast<double>(produced_ns - first_ns) / 1e9;
  // What the run's reports left in PostgreSQL: one row per distinct report.
  const int64_t end_ms = base_ms + ((distinct + o.jobs - 1) / o.jobs + 1) * 60'000;
  const int64_t rows = std::stoll(pg.ExecScalar(
      fmt::format("SELECT count(*) FROM executions WHERE scheduled_for_ms >= {} AND scheduled_for_ms < {}"
                  " AND job_id >= '{}' AND job_id < '{}~'",
                  base_ms, end_ms, o.id_prefix, o.id_prefix)));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // belfry counts a batch after committing it
  const int64_t retries1 = retries_scheduled();
  // CPU per stored report: what the ingestion costs, less sensitive to other load on a shared
  // machine than the rates are.
  double backend_cpu = 0;
  for (const auto& [pid, s] : BackendCpu(pg)) {
    // A backend that connected during the run (belfry opens its execution connection on the
    // first batch) counts from zero.
    const auto it = backend_cpu0.find(pid);
    backend_cpu += it != backend_cpu0.end() ? s - it->second : s;
  }
  const double belfry_cpu =
      o.belfry_pid > 0 && belfry_cpu0 >= 0 ? ProcessCpuSeconds(o.belfry_pid) - belfry_cpu0 : -1;

  // Best steady rate: the highest 5-second mean of stored reports per second.
  const std::vector<int64_t> stored_per_s = meter.PerSecond(stored);
  double best5 = 0;
  for (size_t i = 0; i + 5 <= stored_per_s.size(); ++i) {
    int64_t sum = 0;
    for (size_t k = i; k < i + 5; ++k) sum += stored_per_s[k];
    best5 = std::max(best5, static_cast<double>(sum) / 5.0);
  }
  nlohmann::ordered_json j;
  j["mode"] = "executions";
  j["host"] = HostSnapshot();
  j["topic"] = o.topic;
  j["partitions"] = partitions;
  j["group_id"] = o.group_id;
  j["reports"] = o.reports;
  j["distinct_reports"] = distinct;
  j["duplicates"] = duplicates;
  j["failed_reports"] = failed_reports;
  j["id_prefix"] = o.id_prefix;
  j["jobs"] = o.jobs;
  j["retry_jobs"] = o.retry_jobs;
  j["rate_target_per_s"] = o.rate;
  j["failed_deliveries"] = failed_deliveries;
  if (!first_error.empty()) j["first_error"] = first_error;
  j["initial_lag"] = initial_lag;
  j["complete"] = complete;
  j["produce_seconds"] = produce_seconds;
  j["produced_per_s"] = produce_seconds > 0 ? static_cast<double>(o.reports) / produce_seconds : 0;
  j["seconds"] = seconds;
  j["stored_per_s"] = seconds > 0 ? static_cast<double>(stored->Get()) / seconds : 0;
  j["stored_per_min"] = j["stored_per_s"].get<double>() * 60;
  j["stored_per_s_best_5s"] = best5;
  j["max_lag"] = max_lag;
  j["final_lag"] = lag.load();
  j["produced_to_stored"] = to_stored.Summary();
  j["rows_in_executions"] = rows;
  j["rows_expected"] = distinct;
  // belfry_retries_total{event="scheduled"} over the run (null if /metrics cannot be read).
  j["retries_scheduled"] =
      retries0 >= 0 && retries1 >= 0 ? nlohmann::ordered_json(retries1 - retries0) : nullptr;
  if (o.belfry_pid > 0) {
    const int64_t hwm = PeakRssKb(o.belfry_pid);
    j["belfry_max_rss_mb"] = max_rss_kb >= 0 ? nlohmann::ordered_json(max_rss_kb / 1024.0) : nullptr;
    j["belfry_peak_rss_mb"] = hwm >= 0 ? nlohmann::ordered_json(hwm / 1024.0) : nullptr;
  }
  const double per_report = stored->Get() > 0 ? 1e6 / static_cast<double>(stored->Get()) : 0;
  if (backend_cpu > 0) {
    j["db_backends_cpu_s"] = backend_cpu;
    j["db_backends_cpu_us_per_report"] = backend_cpu * per_report;
  }
  if (belfry_cpu >= 0) {
    j["belfry_cpu_s"] = belfry_cpu;
    j["belfry_cpu_us_per_report"] = belfry_cpu * per_report;
  }
  const GnuplotPlotter plotter(o.plot_prefix);
  nlohmann::ordered_json plots = nlohmann::ordered_json::array();
  for (const std::string& path :
       {plotter.Throughput(
            "throughput", "executions: reports per second", "reports/s",
            {{"stored (committed by belfry)", stored_per_s}, {"acked", meter.PerSecond(acked)}}),
        plotter.Histogram("latency", "executions: produced -> stored (committed offset)", "ms", to_stored)}) {
    if (!path.empty()) plots.push_back(path);
  }
  if (!plots.empty()) j["plots"] = plots;
  fmt::print("{}\n", j.dump(2));
  return complete && failed_deliveries == 0 && rows == distinct ? 0 : 1;
}

}  // namespace

void RegisterExecutionsMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  auto o = std::make_shared<ExecutionsOptions>();
  o->topic = EnvOr("BELFRY_KAFKA_EXECUTIONS_TOPIC", o->topic);
  o->group_id = EnvOr("BELFRY_KAFKA_EXECUTIONS_GROUP_ID", o->group_id);
  o->admin = AdminAddressFromEnv(o->admin);
  CLI::App* sub = app.add_subcommand(
      "executions",
      "flood the executions topic with reports; measure belfry's ingestion rate, lag and latency");
  AddCommonOptions(sub, common);
  sub->add_option("--reports", o->reports, "messages to send, repeats included")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--rate", o->rate, "messages per second (0: as fast as possible)")->capture_default_str();
  sub->add_option("--topic", o->topic, "executions topic (env BELFRY_KAFKA_EXECUTIONS_TOPIC)")
      ->capture_default_str();
  sub->add_option("--group-id", o->group_id,
                  "belfry's execution consumer group (env BELFRY_KAFKA_EXECUTIONS_GROUP_ID)")
      ->capture_default_str();
  sub->add_option("--partitions", o->partitions, "partitions if the run creates the topic")
      ->capture_default_str();
  sub->add_option("--jobs", o->jobs, "distinct job ids reported on")->capture_default_str();
  sub->add_option("--id-prefix", o->id_prefix,
                  "job id prefix (default lt-exec-<epoch s>-: every run its own jobs)");
  sub->add_option("--fail-fraction", o->fail_fraction, "share of failed reports")->capture_default_str();
  sub->add_option("--dup-fraction", o->dup_fraction, "share of messages repeating the previous report")
      ->capture_default_str();
  sub->add_option(
         "--retry-jobs", o->retry_jobs,
         "create the first K jobs (maxRetries 2) through the commands topic first, so their failures "
         "schedule retries")
      ->capture_default_str();
  sub->add_option("--triggers-topic", o->triggers_topic, "trigger topic of those jobs")
      ->capture_default_str();
  sub->add_option("--timeout", o->timeout, "how long to wait for belfry to store everything after producing")
      ->capture_default_str();
  sub->add_option("--admin", o->admin,
                  "belfry's admin address, for belfry_retries_total (env BELFRY_ADMIN_LISTEN)")
      ->capture_default_str();
  sub->add_option("--belfry-pid", o->belfry_pid, "report this process's RSS (max sampled, and VmHWM)");
  sub->add_option("--plot", o->plot_prefix, "write PREFIX-throughput.png and PREFIX-latency.png");
  sub->callback([common, o, run] { *run = [common, o] { return RunExecutions(*common, *o); }; });
}

}  // namespace belfry::loadtest
