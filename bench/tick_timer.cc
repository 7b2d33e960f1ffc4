// tick_timer: belfry's tick query exactly as a node runs it (PgJobStore::ForEachDueJob with
// TermsForMinute of the default intervals, interval and cron jobs alike), timed, against an
// existing belfry database. See docs/loadtest.md ("tick_timer") for what each mode reports.
//
//   ticks       N random (shard, minute) ticks over a day of minutes: latency and rows per tick.
//   transition  every shard-minute around an instant (a DST transition): every returned row is
//               judged against TriggerExpectations (no slot missed, doubled or fired when not
//               due), the ticks next to the instant are timed apart from the rest, and the rows
//               written to jobs and cron_slots meanwhile are counted.
//
// Summaries go to stdout as JSON, progress to stderr. Exit codes as belfry-loadtest's: 0 ok,
// 1 a check failed, 2 a setup error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "belfry/config.h"
#include "core/calendar_schedule.h"
#include "core/iso_time.h"
#include "core/slot_math.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/pg_connection.h"
#include "loadtest/progress_meter.h"
#include "loadtest/trigger_expectations.h"
#include "pg/pg_job_store.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry::bench {
namespace {

using loadtest::PgConnection;
using loadtest::ProgressCounter;
using loadtest::ProgressMeter;
using loadtest::TriggerExpectations;
using nlohmann::ordered_json;

constexpr char kShardCountSql[] =
    "SELECT COALESCE((SELECT value FROM belfry_meta WHERE key = 'shard_count'), '120')";
// Context for a summary: the table's size and its calendar share (one scan, before any tick).
// Two aggregates joined, not a subquery in the target list, which Citus cannot push down.
constexpr char kJobCountsSql[] =
    "SELECT j.*, c.n FROM (SELECT count(*), count(cron_expr),"
    " count(*) FILTER (WHERE cron_expr IS NOT NULL AND interval_minutes = 0) FROM jobs) j,"
    " (SELECT count(*) AS n FROM cron_slots) c";
// Rows written since the statistics were reset, by table group. pg_stat_clear_snapshot() drops
// the snapshot a previous read in this transaction (or session) may hold, so each call sees the
// counters as they stand.
constexpr char kClearStatsSnapshotSql[] = "SELECT pg_stat_clear_snapshot()";
constexpr char kRowsWrittenSql[] =
    "SELECT COALESCE(sum(n_tup_ins + n_tup_upd + n_tup_del) FILTER (WHERE relname LIKE 'jobs%'), 0)::bigint,"
    " COALESCE(sum(n_tup_ins + n_tup_upd + n_tup_del) FILTER (WHERE relname = 'cron_slots'), 0)::bigint"
    " FROM pg_stat_user_tables";

struct CommonOptions {
  std::string database_url;  // default: $BELFRY_DATABASE_URL or the local stack's
};

struct TicksOptions {
  int64_t count = 1000;
  std::string from;  // ISO time; "" = now
  uint64_t seed = 1;
  int64_t warmup = 20;
  std::vector<int32_t> shards;  // sample only these; empty = every shard
};

struct TransitionOptions {
  std::string at;
  int64_t minutes = 10;
  std::string topic_prefix = "lt.triggers.";
  size_t missing_examples = 10;
  int64_t settle_ms = 1000;  // before the second read of the write counters
};

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

EpochMs WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

EpochMs ParseInstant(const std::string& text, const char* option) {
  const std::optional<EpochMs> ms = ParseIsoTime(text);
  if (!ms) throw std::invalid_argument(fmt::format("{}: '{}' is not an ISO-8601 time", option, text));
  return *ms;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// What one tick returned.
struct TickResult {
  int64_t rows = 0;
  int64_t bytes = 0;  // id, topic, key and details
};

// Latencies and row counts of a set of ticks.
struct TickStats {
  std::vector<double> ms;
  std::vector<int64_t> rows;
  int64_t bytes = 0;

  void Add(double tick_ms, const TickResult& r) {
    ms.push_back(tick_ms);
    rows.push_back(r.rows);
    bytes += r.bytes;
  }

  ordered_json Json() const {
    const double n = static_cast<double>(std::max<size_t>(1, ms.size()));
    double sum_ms = 0;
    for (double v : ms) sum_ms += v;
    double sum_rows = 0;
    int64_t max_rows = 0;
    for (int64_t r : rows) {
      sum_rows += static_cast<double>(r);
      max_rows = std::max(max_rows, r);
    }
    const auto round3 = [](double v) { return std::round(v * 1000) / 1000; };
    ordered_json j;
    j["ticks"] = ms.size();
    j["p50_ms"] = round3(Percentile(ms, 50));
    j["p90_ms"] = round3(Percentile(ms, 90));
    j["p99_ms"] = round3(Percentile(ms, 99));
    j["max_ms"] = round3(Percentile(ms, 100));
    j["mean_ms"] = round3(sum_ms / n);
    j["rows_per_tick_mean"] = std::round(sum_rows / n * 10) / 10;
    j["rows_per_tick_max"] = max_rows;
    j["result_kb_per_tick_mean"] = std::round(static_cast<double>(bytes) / n / 1024 * 10) / 10;
    return j;
  }
};

int32_t ReadShardCount(PgConnection& conn) {
  const int32_t shard_count = std::stoi(conn.ExecScalar(kShardCountSql));
  if (shard_count <= 0 || 60'000 % shard_count != 0) {
    throw std::runtime_error("belfry_meta: shard_count must divide 60000 ms");
  }
  return shard_count;
}

ordered_json TableJson(PgConnection& conn) {
  const loadtest::PgRows rows = conn.Exec(kJobCountsSql);
  ordered_json j;
  j["jobs"] = std::stoll(rows[0][0]);
  j["cron_jobs"] = std::stoll(rows[0][1]);
  j["cron_jobs_with_slots"] = std::stoll(rows[0][2]);
  j["cron_slots_rows"] = std::stoll(rows[0][3]);
  return j;
}

// The tick statement of one shard-minute, every row consumed (fn sees each). Throws on a store
// error.
template <typename Fn>
TickResult RunTick(PgJobStore& store, const DueQuery& q, Fn fn) {
  TickResult r;
  const Status st = store.ForEachDueJob(q, [&](const DueJob& job) {
    ++r.rows;
    r.bytes +=
        static_cast<int64_t>(job.id.size() + job.topic.size() + job.key.size() + job.details_json.size());
    fn(job);
  });
  if (!st.ok()) {
    throw std::runtime_error(
        fmt::format("tick (shard {}, minute {}): {}", q.shard, q.last_minute, st.message()));
  }
  return r;
}

int RunTicks(const CommonOptions& common, const TicksOptions& options) {
  PgConnection conn(common.database_url, "");
  const int32_t shard_count = ReadShardCount(conn);
  const int64_t tick_ms = 60'000 / shard_count;
  const std::vector<int32_t> intervals = SchedulerConfig{}.intervals;
  const EpochMs from_ms = options.from.empty() ? WallClockMs() : ParseInstant(options.from, "--from");
  const int64_t from_minute = EpochMinuteOf(from_ms);
  fmt::print(stderr, "tick_timer: reading table sizes ...\n");
  const ordered_json table = TableJson(conn);

  for (int32_t s : options.shards) {
    if (s < 0 || s >= shard_count) throw std::runtime_error(fmt::format("--shards: no shard {}", s));
  }
  PgJobStore store(common.database_url);
  std::mt19937_64 rng(options.seed);
  const auto next_query = [&] {
    const int32_t shard =
        options.shards.empty()
            ? static_cast<int32_t>(rng() % static_cast<uint64_t>(shard_count))
            : options.shards[static_cast<size_t>(rng() % options.shards.size())];
    const int64_t minute = from_minute + static_cast<int64_t>(rng() % 1440);
    return DueQuery{shard, minute, minute, tick_ms, TermsForMinute(intervals, minute)};
  };
  for (int64_t i = 0; i < options.warmup; ++i) RunTick(store, next_query(), [](const DueJob&) {});

  ProgressMeter meter("ticks");
  ProgressCounter* ticks = meter.AddCounter("ticks", options.count);
  ProgressCounter* rows = meter.AddCounter("rows", 0);
  TickStats stats;
  stats.ms.reserve(static_cast<size_t>(options.count));
  stats.rows.reserve(static_cast<size_t>(options.count));
  meter.Start();
  for (int64_t i = 0; i < options.count; ++i) {
    const DueQuery q = next_query();  // outside the timing: TermsForMinute is the node's, not the query's
    const int64_t start_ns = SteadyNs();
    const TickResult r = RunTick(store, q, [](const DueJob&) {});
    stats.Add(static_cast<double>(SteadyNs() - start_ns) / 1e6, r);
    ticks->Add();
    rows->Add(r.rows);
  }
  meter.Stop();

  ordered_json j;
  j["mode"] = "ticks";
  j["shard_count"] = shard_count;
  j["tick_ms"] = tick_ms;
  j["minutes_from"] = FormatIsoTime(from_minute * kMsPerMinute);
  j["minutes_span"] = 1440;
  j["seed"] = options.seed;
  j["warmup_ticks"] = options.warmup;
  j["shards_sampled"] = options.shards.empty() ? shard_count : static_cast<int32_t>(options.shards.size());
  j["table"] = table;
  const ordered_json timing = stats.Json();
  for (const auto& [key, value] : timing.items()) j[key] = value;
  j["host"] = loadtest::HostSnapshot();
  fmt::print("{}\n", j.dump(2));
  return 0;
}

// Rows inserted, updated or deleted so far in the jobs partitions and in cron_slots.
struct RowsWritten {
  int64_t jobs = 0;
  int64_t cron_slots = 0;
};

RowsWritten ReadRowsWritten(PgConnection& conn) {
  conn.Exec(kClearStatsSnapshotSql);
  const loadtest::PgRows rows = conn.Exec(kRowsWrittenSql);
  return RowsWritten{std::stoll(rows[0][0]), std::stoll(rows[0][1])};
}

// The (job id, slot) pairs of one tick, kept in one reused arena.
class ReturnedRows final {
 public:
  void Clear() {
    ids_.clear();
    ends_.clear();
    slots_.clear();
  }
  void Add(std::string_view id, EpochMs slot) {
    ids_.append(id);
    ends_.push_back(ids_.size());
    slots_.push_back(slot);
  }
  size_t size() const { return slots_.size(); }
  std::string_view id(size_t i) const {
    const size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(ids_).substr(begin, ends_[i] - begin);
  }
  EpochMs slot(size_t i) const { return slots_[i]; }

 private:
  std::string ids_;
  std::vector<size_t> ends_;
  std::vector<EpochMs> slots_;
};

int RunTransition(const CommonOptions& common, const TransitionOptions& options) {
  const EpochMs at_ms = ParseInstant(options.at, "--at");
  const int64_t at_minute = EpochMinuteOf(at_ms);
  const int64_t first_minute = at_minute - options.minutes;
  const int64_t end_minute = at_minute + options.minutes;  // exclusive

  PgConnection conn(common.database_url, "");
  TriggerExpectations expectations;
  fmt::print(stderr, "tick_timer: reading jobs with topic prefix {} ...\n", options.topic_prefix);
  expectations.Load(conn, options.topic_prefix);
  const int32_t shard_count = expectations.shard_count();
  const int64_t tick_ms = expectations.tick_ms();
  const EpochMs window_first = SlotMs(first_minute, 0, tick_ms);
  const EpochMs window_last = SlotMs(end_minute - 1, shard_count - 1, tick_ms);
  expectations.SetWindow(window_first, window_last);
  fmt::print(
      stderr,
      "tick_timer: {} jobs ({} cron: {} in unknown zones, {} unparsable), slots {} .. {}: {} expected\n",
      expectations.job_count(), expectations.cron_jobs(), expectations.cron_unknown_zone_jobs(),
      expectations.cron_invalid_jobs(), FormatIsoTime(window_first), FormatIsoTime(window_last),
      expectations.expected());

  const std::vector<int32_t> intervals = SchedulerConfig{}.intervals;
  PgJobStore store(common.database_url);
  const int64_t shard_minutes = (end_minute - first_minute) * shard_count;
  ProgressMeter meter("transition");
  ProgressCounter* ticks = meter.AddCounter("shard-minutes", shard_minutes);
  ProgressCounter* arrived = meter.AddCounter("expected seen", expectations.expected());
  int64_t duplicates = 0, not_due = 0, unknown = 0, outside_window = 0, other_topics = 0, rows_total = 0;
  TickStats near;  // minutes [at - 2, at + 2]
  TickStats rest;
  ReturnedRows returned;

  const RowsWritten before = ReadRowsWritten(conn);
  meter.Start();
  for (int64_t m = first_minute; m < end_minute; ++m) {
    const std::vector<PhaseTerm> terms = TermsForMinute(intervals, m);
    for (int32_t shard = 0; shard < shard_count; ++shard) {
      const DueQuery q{shard, m, m, tick_ms, terms};
      // The rows are judged after the tick, so its time is the query's and the stream's alone.
      returned.Clear();
      const int64_t start_ns = SteadyNs();
      const TickResult r = RunTick(store, q, [&](const DueJob& job) {
        if (job.topic.substr(0, options.topic_prefix.size()) != options.topic_prefix) {
          ++other_topics;  // another workload's job: not ours to judge
          return;
        }
        returned.Add(job.id, job.scheduled_for_ms != 0 ? job.scheduled_for_ms
                                                       : SlotMs(job.due_minute, shard, tick_ms));
      });
      const double elapsed_ms = static_cast<double>(SteadyNs() - start_ns) / 1e6;
      (m >= at_minute - 2 && m <= at_minute + 2 ? near : rest).Add(elapsed_ms, r);
      for (size_t i = 0; i < returned.size(); ++i) {
        switch (expectations.Record(returned.id(i), returned.slot(i))) {
          case TriggerExpectations::Verdict::kExpected:
            arrived->Add();
            break;
          case TriggerExpectations::Verdict::kDuplicate:
            ++duplicates;
            break;
          case TriggerExpectations::Verdict::kOutsideWindow:
            ++outside_window;
            break;
          case TriggerExpectations::Verdict::kUnknownJob:
            ++unknown;
            break;
          case TriggerExpectations::Verdict::kNotDue:
            ++not_due;
            break;
          case TriggerExpectations::Verdict::kManual:  // TriggerTally's verdict, from a header; Record never gives it
            break;
        }
      }
      rows_total += r.rows;
      ticks->Add();
    }
  }
  meter.Stop();
  // A backend publishes its counters at most once a second (PostgreSQL 15), so writes from the
  // last second of the run need a moment to show.
  std::this_thread::sleep_for(std::chrono::milliseconds(options.settle_ms));
  const RowsWritten after = ReadRowsWritten(conn);

  std::vector<TriggerExpectations::MissingTrigger> examples;
  const int64_t missing = expectations.CountMissing(&examples, options.missing_examples);

  ordered_json j;
  j["mode"] = "transition";
  j["at"] = FormatIsoTime(at_minute * kMsPerMinute);
  j["minutes"] = {{"first", FormatIsoTime(first_minute * kMsPerMinute)},
                  {"last", FormatIsoTime((end_minute - 1) * kMsPerMinute)},
                  {"count", end_minute - first_minute}};
  j["shard_count"] = shard_count;
  j["tick_ms"] = tick_ms;
  j["topic_prefix"] = options.topic_prefix;
  j["tzdata"] = SystemTimeZones().Version();
  j["jobs"] = expectations.job_count();
  j["paused_jobs"] = expectations.paused_jobs();
  j["cron_jobs"] = expectations.cron_jobs();
  j["cron_expressions"] = expectations.cron_expressions();
  j["cron_unknown_zone_jobs"] = expectations.cron_unknown_zone_jobs();
  j["cron_invalid_jobs"] = expectations.cron_invalid_jobs();
  j["rows"] = rows_total;
  j["expected"] = expectations.expected();
  j["arrived"] = expectations.arrived();
  j["missing"] = missing;
  if (!examples.empty()) {
    ordered_json list = ordered_json::array();
    for (const auto& e : examples) list.push_back(fmt::format("{} @ {}", e.job_id, FormatIsoTime(e.slot_ms)));
    j["missing_examples"] = list;
  }
  j["duplicates"] = duplicates;
  j["not_due"] = not_due;
  j["unknown"] = unknown;
  j["outside_window"] = outside_window;
  j["other_topic_rows"] = other_topics;
  j["timing_near"] = near.Json();
  j["timing_near"]["minutes"] = fmt::format("{} .. {}", FormatIsoTime((at_minute - 2) * kMsPerMinute),
                                            FormatIsoTime((at_minute + 2) * kMsPerMinute));
  j["timing_rest"] = rest.Json();
  j["rows_written"] = {{"jobs", after.jobs - before.jobs},
                       {"cron_slots", after.cron_slots - before.cron_slots}};
  j["host"] = loadtest::HostSnapshot();
  fmt::print("{}\n", j.dump(2));
  return missing == 0 && duplicates == 0 && not_due == 0 && unknown == 0 ? 0 : 1;
}

}  // namespace
}  // namespace belfry::bench

int main(int argc, char** argv) {
  using namespace belfry::bench;
  CommonOptions common;
  const char* url = std::getenv("BELFRY_DATABASE_URL");
  common.database_url =
      url != nullptr && *url != 0 ? url : "postgresql://belfry:belfry@127.0.0.1:55432/belfry";

  CLI::App app{"tick_timer: belfry's tick query (interval and cron jobs), timed, against a belfry database"};
  app.require_subcommand(1);
  const auto add_common = [&common](CLI::App* sub) {
    sub->add_option("--database-url", common.database_url,
                    "PostgreSQL URL of belfry's database (env BELFRY_DATABASE_URL)")
        ->capture_default_str();
  };

  TicksOptions ticks;
  CLI::App* ticks_cmd =
      app.add_subcommand("ticks", "time N random (shard, minute) ticks over a day of minutes");
  add_common(ticks_cmd);
  ticks_cmd->add_option("--count", ticks.count, "timed ticks")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  ticks_cmd->add_option("--from", ticks.from, "first minute of the day sampled, ISO-8601 (default: now)");
  ticks_cmd->add_option("--seed", ticks.seed, "random seed")->capture_default_str();
  ticks_cmd->add_option("--shards", ticks.shards, "sample only these shards (comma-separated; default every shard)")
      ->delimiter(',');
  ticks_cmd->add_option("--warmup", ticks.warmup, "untimed ticks first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);

  TransitionOptions transition;
  CLI::App* transition_cmd = app.add_subcommand(
      "transition", "run every shard-minute in [at - K, at + K) and judge every row against the jobs table");
  add_common(transition_cmd);
  transition_cmd->add_option("--at", transition.at, "the instant, ISO-8601 (e.g. a DST transition)")
      ->required();
  transition_cmd->add_option("--minutes", transition.minutes, "K: minutes on each side")
      ->capture_default_str()
      ->check(CLI::Range(1, 1440));
  transition_cmd
      ->add_option("--topic-prefix", transition.topic_prefix, "judge the jobs whose topic starts so")
      ->capture_default_str();
  transition_cmd
      ->add_option("--settle-ms", transition.settle_ms,
                   "wait before reading the write counters after the run (an idle backend may hold its "
                   "counters up to 10 s)")
      ->capture_default_str()
      ->check(CLI::Range(0, 600'000));
  transition_cmd->add_option("--missing-examples", transition.missing_examples, "missing slots listed")
      ->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  try {
    if (ticks_cmd->parsed()) return RunTicks(common, ticks);
    return RunTransition(common, transition);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tick_timer: {}\n", e.what());
    return 2;
  }
}
