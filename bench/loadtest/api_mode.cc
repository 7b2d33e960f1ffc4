// api: drives belfry's admin HTTP API the way real clients do, over keep-alive connections (one
// request in flight per connection, no pipelining), with the read mix (70% one job, 20%
// its executions, 10% one owner's jobs) on the ids and owners a `seed` created. Reports the
// request rate, latency per route and overall, status counts, 503s with their Retry-After,
// reconnects, and belfry's CPU and memory. See docs/loadtest.md.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "loadtest/belfry_process.h"
#include "loadtest/gnuplot_plotter.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/http_keepalive_client.h"
#include "loadtest/http_request_mix.h"
#include "loadtest/latency_histogram.h"
#include "loadtest/loadtest_modes.h"
#include "loadtest/metrics_scrape.h"
#include "loadtest/progress_meter.h"

namespace belfry::loadtest {
namespace {

struct ApiOptions {
  std::string admin;  // default: $BELFRY_ADMIN_LISTEN or belfry's 127.0.0.1:8080
  std::string token;  // default: $BELFRY_ADMIN_TOKEN
  int32_t connections = 32;
  int32_t threads = 1;
  std::string duration = "60s";
  double warmup_s = 0;
  double rate = 0;  // requests/s over all connections; 0 = closed loop
  std::string mix = kDefaultApiMix;
  int64_t jobs = 100'000;
  uint64_t first = 0;
  int32_t owners = 8;
  std::string id_prefix = "lt-";
  int32_t executions_limit = 20;
  int32_t list_limit = 50;
  int belfry_pid = 0;
  uint64_t seed = 1;
  std::string plot_prefix;
};

// Latency values are recorded in microseconds (LatencyHistogram is exact below 1024 of its
// units, so sub-millisecond latencies keep their resolution) and reported in milliseconds.
nlohmann::ordered_json LatencySummaryMs(const LatencyHistogram& h) {
  auto ms = [](int64_t us) { return static_cast<double>(us) / 1000.0; };
  nlohmann::ordered_json j;
  j["count"] = h.count();
  j["p50_ms"] = ms(h.Percentile(50));
  j["p90_ms"] = ms(h.Percentile(90));
  j["p99_ms"] = ms(h.Percentile(99));
  j["p999_ms"] = ms(h.Percentile(99.9));
  j["max_ms"] = ms(h.max());
  j["mean_ms"] = h.mean() / 1000.0;
  return j;
}

// Everything counted about the requests, shared by the client threads and the progress line.
// One mutex: a lock per response is cheap next to its two system calls.
class ApiTally final {
 public:
  // `measured`: the request started after the warm-up and counts in the summary.
  void Record(const ApiRequest& request, const HttpResult& result, bool measured) {
    const int64_t us = (result.done_ns - result.intended_ns) / 1000;
    std::string_view error_kind;
    int status = 0;
    if (!result.ok) {
      error_kind = result.unanswered_at_end ? "unanswered_at_end" : "transport";
    } else {
      status = result.response->status();
      if (status != request.expected_status) {
        error_kind = "status";
      } else if (status == 200 && !request.expect_in_body.empty() &&
                 result.response->body().find(request.expect_in_body) == std::string::npos) {
        error_kind = "wrong_body";
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++second_requests_;
    if (result.ok) second_.Record(us);
    if (!error_kind.empty()) ++second_errors_;
    if (status == 503) ++second_503_;
    if (!measured) {
      ++warmup_requests_;
      return;
    }
    const size_t r = static_cast<size_t>(request.route);
    ++requests_[r];
    if (result.ok) {
      all_.Record(us);
      from_send_.Record((result.done_ns - result.sent_ns) / 1000);
      by_route_[r].Record(us);
      ++statuses_[status];
      if (status == 503) {
        ++http_503_;
        ++retry_after_[result.response->retry_after().empty() ? "(none)" : result.response->retry_after()];
      }
    }
    if (!error_kind.empty()) {
      ++errors_[r];
      ++errors_by_kind_[std::string(error_kind)];
      if (first_errors_.size() < 5) {
        std::string text = fmt::format("{} GET {}: ", error_kind, request.target);
        if (result.ok) {
          text += fmt::format("{} {}", status, result.response->body().substr(0, 200));
        } else {
          text += result.error;
        }
        first_errors_.push_back(std::move(text));
      }
    }
  }

  // The last second's text for the progress line; starts the next second.
  std::string TakeSecond(std::vector<int64_t>* p99_us_series) {
    LatencyHistogram fresh;
    int64_t requests = 0, errors = 0, s503 = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::swap(fresh, second_);
      requests = std::exchange(second_requests_, 0);
      errors = std::exchange(second_errors_, 0);
      s503 = std::exchange(second_503_, 0);
      total_errors_ += errors;
      total_503_ += s503;
    }
    p99_us_series->push_back(fresh.Percentile(99));
    return fmt::format(
        "last 1s: {} req, p50 {:.2f} ms p99 {:.2f} ms | errors {} (total {}) | 503 {} (total {})", requests,
        static_cast<double>(fresh.Percentile(50)) / 1000.0,
        static_cast<double>(fresh.Percentile(99)) / 1000.0, errors, total_errors_, s503, total_503_);
  }

  // REQUIRES: the client threads have ended.
  void Summarize(nlohmann::ordered_json& j, const ApiRouteMix& mix, bool rate_mode) const {
    int64_t requests = 0, errors = 0;
    for (size_t r = 0; r < kApiRouteCount; ++r) {
      requests += requests_[r];
      errors += errors_[r];
    }
    j["requests"] = requests;
    j["responses"] = all_.count();
    j["errors"] = errors;
    j["error_rate"] = requests > 0 ? static_cast<double>(errors) / static_cast<double>(requests) : 0;
    nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
    for (const auto& [kind, n] : errors_by_kind_) kinds[kind] = n;
    j["errors_by_kind"] = kinds;
    if (!first_errors_.empty()) j["first_errors"] = first_errors_;
    nlohmann::ordered_json statuses = nlohmann::ordered_json::object();
    for (const auto& [status, n] : statuses_) statuses[std::to_string(status)] = n;
    j["status_counts"] = statuses;
    j["http_503"] = http_503_;
    nlohmann::ordered_json retry_after = nlohmann::ordered_json::object();
    for (const auto& [value, n] : retry_after_) retry_after[value] = n;
    j["retry_after_seen"] = retry_after;
    j["latency"] = LatencySummaryMs(all_);
    if (rate_mode) j["latency_from_send"] = LatencySummaryMs(from_send_);
    nlohmann::ordered_json routes = nlohmann::ordered_json::object();
    for (size_t r = 0; r < kApiRouteCount; ++r) {
      if (mix.weight(static_cast<ApiRoute>(r)) == 0 && requests_[r] == 0) continue;
      nlohmann::ordered_json route = LatencySummaryMs(by_route_[r]);
      route["requests"] = requests_[r];
      route["errors"] = errors_[r];
      routes[std::string(ApiRouteName(static_cast<ApiRoute>(r)))] = route;
    }
    j["by_route"] = routes;
    j["warmup_requests"] = warmup_requests_;
  }

  const LatencyHistogram& all() const { return all_; }
  int64_t warmup_requests() const { return warmup_requests_; }
  int64_t requests() const {
    int64_t n = 0;
    for (int64_t v : requests_) n += v;
    return n;
  }
  int64_t errors() const {
    int64_t n = 0;
    for (int64_t v : errors_) n += v;
    return n;
  }

 private:
  std::mutex mu_;
  LatencyHistogram second_;
  int64_t second_requests_ = 0;
  int64_t second_errors_ = 0;
  int64_t second_503_ = 0;
  int64_t total_errors_ = 0;  // as the progress line counts them (warm-up included)
  int64_t total_503_ = 0;
  int64_t warmup_requests_ = 0;
  std::array<int64_t, kApiRouteCount> requests_{};
  std::array<int64_t, kApiRouteCount> errors_{};
  std::array<LatencyHistogram, kApiRouteCount> by_route_;
  LatencyHistogram all_;
  LatencyHistogram from_send_;  // differs from all_ in rate mode only
  std::map<int, int64_t> statuses_;
  std::map<std::string, int64_t> errors_by_kind_;
  std::map<std::string, int64_t> retry_after_;
  int64_t http_503_ = 0;
  std::vector<std::string> first_errors_;
};

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// belfry listens on 0.0.0.0 or [::]: connect through loopback.
std::string ConnectAddress(std::string listen) {
  if (listen.starts_with("0.0.0.0:")) return "127.0.0.1:" + listen.substr(8);
  if (listen.starts_with("[::]:")) return "[::1]:" + listen.substr(5);
  return listen;
}

int RunApi(const ApiOptions& options) {
  const int64_t duration_ms = ParseDurationMs(options.duration);
  const auto warmup_ms = static_cast<int64_t>(options.warmup_s * 1000);
  if (duration_ms <= warmup_ms) throw std::invalid_argument("--duration must be longer than --warmup-s");
  if (options.threads < 1 || options.threads > options.connections)
    throw std::invalid_argument("--threads must be in 1..--connections");
  const HttpEndpoint endpoint = HttpEndpoint::Resolve(ConnectAddress(options.admin));
  if (const std::string error = endpoint.TryConnect(); !error.empty()) throw std::runtime_error(error);

  JobCommandSpec spec;
  spec.id_prefix = options.id_prefix;
  spec.owners = options.owners;
  ApiRequestOptions request_options;
  request_options.first = options.first;
  request_options.jobs = static_cast<uint64_t>(options.jobs);
  request_options.executions_limit = options.executions_limit;
  request_options.list_limit = options.list_limit;
  const HttpRequestMix requests(JobCommandFactory(spec), ApiRouteMix::Parse(options.mix), request_options);
  const std::string extra_headers =
      options.token.empty() ? "" : "Authorization: Bearer " + options.token + "\r\n";

  ApiTally tally;
  std::vector<int64_t> p99_series;
  std::vector<std::unique_ptr<HttpKeepAliveClient>> clients;
  auto reconnects = [&clients] {
    int64_t n = 0;
    for (const auto& c : clients)
      n += c->reconnects_server_close() + c->reconnects_idle_close() + c->reconnects_error();
    return n;
  };
  double belfry_cpu_last = options.belfry_pid > 0 ? ProcessCpuSeconds(options.belfry_pid) : -1;
  ProgressMeter meter("api", [&] {
    std::string text = tally.TakeSecond(&p99_series) + fmt::format(" | reconnects {}", reconnects());
    if (options.belfry_pid > 0) {
      const double cpu = ProcessCpuSeconds(options.belfry_pid);
      if (cpu >= 0 && belfry_cpu_last >= 0)
        text += fmt::format(" | belfry cpu {:.0f}%", (cpu - belfry_cpu_last) * 100);
      belfry_cpu_last = cpu;
    }
    return text;
  });
  ProgressCounter* done = meter.AddCounter("requests", 0);

  // Split the connections and the rate over the threads; each thread has its own generator.
  std::vector<std::vector<ApiRequest>> in_flight(static_cast<size_t>(options.threads));
  std::vector<std::mt19937_64> rngs;
  const int64_t start_ns = MonotonicNs();
  const int64_t warm_end_ns = start_ns + warmup_ms * 1'000'000;
  const int64_t stop_ns = start_ns + duration_ms * 1'000'000;
  rngs.reserve(static_cast<size_t>(options.threads));
  for (int32_t t = 0; t < options.threads; ++t) {
    HttpClientOptions client;
    client.endpoint = endpoint;
    client.connections =
        options.connections / options.threads + (t < options.connections % options.threads ? 1 : 0);
    client.rate_per_s = options.rate / options.threads;
    client.extra_headers = extra_headers;
    auto& current = in_flight[static_cast<size_t>(t)];  // the request in flight per connection
    current.resize(static_cast<size_t>(client.connections));
    std::mt19937_64* rng = &rngs.emplace_back(Mix64(options.seed + static_cast<uint64_t>(t)));
    clients.push_back(std::make_unique<HttpKeepAliveClient>(
        client,
        [&current, rng, &requests](uint32_t c) {
          current[c] = requests.Next(*rng);
          return current[c].target;
        },
        [&current, &tally, done, warm_end_ns](uint32_t c, const HttpResult& result) {
          tally.Record(current[c], result, result.intended_ns >= warm_end_ns);
          done->Add();
        }));
  }

  const double self_cpu_start = SelfCpuSeconds();
  const double belfry_cpu_start = options.belfry_pid > 0 ? ProcessCpuSeconds(options.belfry_pid) : -1;
  std::atomic<bool> abort{false};
  std::vector<std::thread> threads;
  std::mutex failure_mu;
  std::string failure;
  meter.Start();
  for (auto& client : clients) {
    threads.emplace_back([&, c = client.get()] {
      try {
        c->Run(stop_ns, stop_ns + 5'000'000'000LL, &abort);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(failure_mu);
        failure = e.what();
        abort.store(true);
      }
    });
  }
  for (auto& t : threads) t.join();
  meter.Stop();
  const double wall_s = static_cast<double>(MonotonicNs() - start_ns) / 1e9;
  const double self_cpu = SelfCpuSeconds() - self_cpu_start;
  if (!failure.empty()) throw std::runtime_error(failure);

  const double measured_s = static_cast<double>(duration_ms - warmup_ms) / 1000.0;
  nlohmann::ordered_json j;
  j["mode"] = "api";
  j["host"] = HostSnapshot();
  j["admin"] = endpoint.host_header;
  j["connections"] = options.connections;
  j["threads"] = options.threads;
  j["mix"] = requests.mix().ToString();
  j["jobs"] = fmt::format("{} ({}..{}), {} owners", options.jobs, JobCommandFactory(spec).Id(options.first),
                          JobCommandFactory(spec).Id(options.first + static_cast<uint64_t>(options.jobs) - 1),
                          options.owners);
  j["rate_target_per_s"] = options.rate > 0 ? nlohmann::ordered_json(options.rate) : nullptr;
  j["latency_from"] = options.rate > 0 ? "intended start" : "send";
  j["duration_s"] = static_cast<double>(duration_ms) / 1000.0;
  j["warmup_s"] = options.warmup_s;
  j["measured_s"] = measured_s;
  tally.Summarize(j, requests.mix(), options.rate > 0);
  j["requests_per_s"] = static_cast<double>(tally.requests()) / measured_s;
  int64_t opened = 0, server_close = 0, idle_close = 0, error_reconnects = 0, connect_failures = 0,
          bytes_in = 0, bytes_out = 0, late = 0;
  for (const auto& c : clients) {
    opened += c->connections_opened();
    server_close += c->reconnects_server_close();
    idle_close += c->reconnects_idle_close();
    error_reconnects += c->reconnects_error();
    connect_failures += c->connect_failures();
    bytes_in += c->bytes_in();
    bytes_out += c->bytes_out();
    late += c->late_starts();
  }
  // These cover the whole run, warm-up included.
  j["connections_opened"] = opened;
  j["reconnects"] = {{"server_close", server_close}, {"idle_close", idle_close}, {"error", error_reconnects}};
  j["connect_failures"] = connect_failures;
  j["requests_per_connection"] =
      opened > 0
          ? static_cast<double>(tally.requests() + tally.warmup_requests()) / static_cast<double>(opened)
          : 0;
  j["bytes_in"] = bytes_in;
  j["bytes_out"] = bytes_out;
  if (options.rate > 0) j["late_starts"] = late;
  j["generator_cpu_percent"] = wall_s > 0 ? self_cpu / wall_s * 100 : 0;
  if (options.belfry_pid > 0) {
    nlohmann::ordered_json b;
    b["pid"] = options.belfry_pid;
    const double cpu_end = ProcessCpuSeconds(options.belfry_pid);
    b["cpu_percent"] = cpu_end >= 0 && belfry_cpu_start >= 0
                           ? nlohmann::ordered_json((cpu_end - belfry_cpu_start) / wall_s * 100)
                           : nullptr;
    const int64_t rss = CurrentRssKb(options.belfry_pid);
    const int64_t peak = PeakRssKb(options.belfry_pid);
    b["rss_mb"] = rss >= 0 ? nlohmann::ordered_json(static_cast<double>(rss) / 1024.0) : nullptr;
    b["peak_rss_mb"] = peak >= 0 ? nlohmann::ordered_json(static_cast<double>(peak) / 1024.0) : nullptr;
    j["belfry"] = b;
  }
  // The p99 chart in µs while it stays below 10 ms, else in whole ms.
  const bool p99_in_ms =
      !p99_series.empty() && *std::max_element(p99_series.begin(), p99_series.end()) >= 10'000;
  std::vector<int64_t> p99_plotted = p99_series;
  if (p99_in_ms) {
    for (int64_t& v : p99_plotted) v /= 1000;
  }
  const GnuplotPlotter plotter(options.plot_prefix);
  nlohmann::ordered_json plots = nlohmann::ordered_json::array();
  for (const std::string& path :
       {plotter.Throughput("throughput", "api: responses per second", "requests/s",
                           {{"responses (all routes)", meter.PerSecond(done)}}),
        plotter.Throughput("p99", "api: p99 latency of each second", p99_in_ms ? "ms" : "µs",
                           {{"p99 (all routes)", p99_plotted}}),
        plotter.Histogram("latency", "api: request latency (all routes, after warm-up)", "µs",
                          tally.all())}) {
    if (!path.empty()) plots.push_back(path);
  }
  if (!plots.empty()) j["plots"] = plots;
  fmt::print("{}\n", j.dump(2));
  return tally.requests() > 0 && tally.errors() == 0 ? 0 : 1;
}

}  // namespace

void RegisterApiMode(CLI::App& app, CommonOptions* common, ModeRunner* run) {
  (void)common;  // the API mode needs neither Kafka nor PostgreSQL
  auto options = std::make_shared<ApiOptions>();
  options->admin = AdminAddressFromEnv("127.0.0.1:8080");
  if (const char* token = std::getenv("BELFRY_ADMIN_TOKEN"); token != nullptr) options->token = token;
  CLI::App* sub = app.add_subcommand(
      "api",
      "drive belfry's admin HTTP API over keep-alive connections with a read mix; report rate and latency");
  sub->add_option("--admin", options->admin, "belfry's admin address host:port (env BELFRY_ADMIN_LISTEN)")
      ->capture_default_str();
  sub->add_option("--token", options->token, "bearer token (env BELFRY_ADMIN_TOKEN)");
  sub->add_option("--connections", options->connections, "keep-alive connections, one request in flight each")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  sub->add_option("--threads", options->threads, "client threads (each an epoll loop over its share)")
      ->capture_default_str();
  sub->add_option("--duration", options->duration, "how long to send, warm-up included (e.g. 60s)")
      ->capture_default_str();
  sub->add_option("--warmup-s", options->warmup_s, "requests started in the first S seconds are not reported")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--rate", options->rate,
                  "requests/s at fixed intended times (latency counted from them); default: closed loop")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--mix", options->mix,
                  "route weights: get, executions, owners, missing (404 expected), healthz")
      ->capture_default_str();
  sub->add_option("--jobs", options->jobs, "the seeded jobs (as seed --jobs)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--first", options->first, "number of the first seeded job (as seed --first)")
      ->capture_default_str();
  sub->add_option("--owners", options->owners, "the seed's --owners")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--id-prefix", options->id_prefix, "the seed's --id-prefix")->capture_default_str();
  sub->add_option("--executions-limit", options->executions_limit, "limit= of the executions route")
      ->capture_default_str();
  sub->add_option("--list-limit", options->list_limit, "limit= of the owner list route")
      ->capture_default_str();
  sub->add_option("--belfry-pid", options->belfry_pid, "report this process's CPU and RSS");
  sub->add_option("--seed", options->seed, "random seed")->capture_default_str();
  sub->add_option("--plot", options->plot_prefix,
                  "write PREFIX-throughput.png, PREFIX-p99.png and PREFIX-latency.png");
  sub->callback([options, run] { *run = [options] { return RunApi(*options); }; });
}

}  // namespace belfry::loadtest
