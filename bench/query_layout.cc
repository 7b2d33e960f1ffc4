// query_layout: per-tick query latency of project44's two-index layout against belfry's, on the
// same jobs, in one run, in a throwaway database.
//
//   p44_jobs  project44's layout (reference/004): one table, a btree on shard and a btree on
//             (interval_minutes, offset_minutes); the tick query ANDs shard with an OR of one
//             (interval, offset) pair per configured interval (BitmapAnd of a BitmapOr).
//   jobs      belfry's layout, created by running migrations/*.sql as they stand, queried with
//             belfry's own tick query text (pg_queries::kDueJobsSql).
//
// Both tables get the same rows (COPY FROM STDIN), then VACUUM ANALYZE. The same sample of
// (shard, minute) ticks runs against both, interleaved (alternating which goes first) so both
// see the same cache conditions; every row of every result is read. With --churn X, X% of the
// job count in random updates, deletes and inserts is applied identically to both tables and the
// ticks are measured again, after ANALYZE only (no VACUUM FULL, no REINDEX).
//
// Human-readable tables go to stderr; the JSON summary goes to stdout.

#include <fmt/format.h>
#include <libpq-fe.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/iso_time.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "loadtest/host_snapshot.h"
#include "loadtest/pg_connection.h"
#include "loadtest/workload.h"
#include "pg/pg_due_queries.h"

namespace belfry::bench {
namespace {

using Clock = std::chrono::steady_clock;
using loadtest::PgConnection;
using nlohmann::ordered_json;

struct Options {
  std::string database_url;
  std::string database = "belfry_bench_layout";
  std::string migrations_dir = BELFRY_SOURCE_DIR "/migrations";
  int64_t jobs = 200'000;
  int ticks = 240;
  int warmup_ticks = 24;
  double churn_percent = 0;
  bool churn_vacuum = false;
  bool keep = false;
  bool reuse = false;
  bool explain = false;
  bool breakdown = false;
  uint64_t seed = 1;
  int32_t shard_count = 120;
  size_t details_bytes = 200;
  std::string mix = loadtest::kDefaultIntervalMix;
  std::vector<int32_t> intervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};
};

// ---------------------------------------------------------------------------------------------
// The synthetic jobs: a pure function of (seed, n), so both tables and the churn agree.

struct SyntheticJob {
  std::string id;
  int32_t shard = 0;
  int32_t interval = 1;
  int32_t offset = 0;
  bool paused = false;
  std::optional<EpochMs> start_at;
  std::optional<EpochMs> end_at;
  uint64_t n = 0;
};

constexpr int64_t kMsPerDay = 86'400'000;

class JobFactory final {
 public:
  JobFactory(const Options& options, EpochMs now)
      : options_(options), mix_(loadtest::IntervalMix::Parse(options.mix)), now_(now) {}

  SyntheticJob Make(uint64_t n) const {
    std::mt19937_64 rng(loadtest::Mix64(options_.seed * 0x9e3779b97f4a7c15ULL + n));
    SyntheticJob job;
    job.n = n;
    job.id = fmt::format("job-{:016x}", loadtest::Mix64(n ^ (options_.seed << 40)));
    job.shard = ShardForId(job.id, options_.shard_count);
    job.interval = mix_.Pick(rng);
    job.offset = static_cast<int32_t>(rng() % static_cast<uint64_t>(job.interval));
    const uint64_t r = rng() % 1000;
    job.paused = r < 20;  // 2%
    // A few jobs carry dates: 3% started in the past, 1% start in the future, 3% end in the
    // future, 1% have ended (project44 would have hard-deleted those; the query must skip them).
    const uint64_t d = rng() % 1000;
    const auto days = [&](int64_t lo, int64_t hi) {
      return lo * kMsPerDay + static_cast<int64_t>(rng() % static_cast<uint64_t>((hi - lo) * kMsPerDay));
    };
    if (d < 30) {
      job.start_at = now_ - days(0, 30);
    } else if (d < 40) {
      job.start_at = now_ + days(2, 30);
    } else if (d < 70) {
      job.end_at = now_ + days(2, 90);
    } else if (d < 80) {
      job.end_at = now_ - days(1, 30);
    }
    return job;
  }

  // One COPY text line for the column list kCopyColumns.
  void AppendCopyLine(const SyntheticJob& job, std::string* out) const {
    const uint64_t h = loadtest::Mix64(job.n);
    fmt::format_to(std::back_inserter(*out), "{}\t{}\t{}\t{}\tlt-owner-{}\tlt.triggers.{}\tshipment-{}\t",
                   job.id, job.shard, job.interval, job.offset, h % 10, (h >> 8) % 16, job.n);
    out->append(loadtest::MakeJobDetails(job.n, options_.details_bytes));
    out->push_back('\t');
    out->append(job.start_at ? FormatIsoTime(*job.start_at) : "\\N");
    out->push_back('\t');
    out->append(job.end_at ? FormatIsoTime(*job.end_at) : "\\N");
    fmt::format_to(std::back_inserter(*out), "\t{}\t{}\t{}\n", job.paused ? 't' : 'f', h % 4, job.n);
  }

  const loadtest::IntervalMix& mix() const { return mix_; }

 private:
  const Options& options_;
  const loadtest::IntervalMix mix_;
  const EpochMs now_;
};

constexpr char kCopyColumns[] =
    "(id, shard, interval_minutes, offset_minutes, owner, topic, key, details, start_at, end_at, paused, "
    "src_partition, src_offset)";

// project44's layout: the same columns as belfry's jobs table (so rows are equally wide) minus
// the generated phase column, with their two single-purpose btrees and default fillfactor.
constexpr char kP44Schema[] = R"sql(
CREATE TABLE p44_jobs (
  id               text        PRIMARY KEY,
  shard            smallint    NOT NULL,
  interval_minutes int         NOT NULL,
  offset_minutes   int         NOT NULL,
  owner            text        NOT NULL DEFAULT '',
  topic            text        NOT NULL,
  key              text        NOT NULL DEFAULT '',
  details          text        NOT NULL DEFAULT '{}',
  start_at         timestamptz,
  end_at           timestamptz,
  priority         int         NOT NULL DEFAULT 0,
  paused           boolean     NOT NULL DEFAULT false,
  src_partition    int         NOT NULL,
  src_offset       bigint      NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX p44_jobs_shard_idx ON p44_jobs (shard);
CREATE INDEX p44_jobs_interval_offset_idx ON p44_jobs (interval_minutes, offset_minutes);
)sql";

// project44's tick query: $1 shard, $2 slot (epoch ms), then one (interval, offset) pair per
// configured interval. The slot-time filters are written exactly as belfry writes them.
std::string P44TickSql(size_t interval_count) {
  std::string pairs;
  for (size_t i = 0; i < interval_count; ++i) {
    if (i > 0) pairs += " OR ";
    pairs += fmt::format("(interval_minutes = ${}::int AND offset_minutes = ${}::int)", 3 + 2 * i, 4 + 2 * i);
  }
  return fmt::format(
      "SELECT id, topic, key, details, interval_minutes FROM p44_jobs "
      "WHERE shard = $1::smallint AND ({}) AND NOT paused "
      "AND (start_at IS NULL OR start_at <= (SELECT to_timestamp(0) + $2::bigint * interval '1 "
      "millisecond')) "
      "AND (end_at IS NULL OR end_at > (SELECT to_timestamp(0) + $2::bigint * interval '1 millisecond'))",
      pairs);
}

struct Tick {
  int32_t shard = 0;
  int64_t minute = 0;
};

enum class Layout { kP44, kBelfry };
const char* LayoutName(Layout l) { return l == Layout::kP44 ? "p44" : "belfry"; }

// The statement name and parameters of `layout`'s tick query for `tick`.
std::vector<std::string> TickParams(Layout layout, const Tick& tick, const Options& options) {
  const EpochMs slot = SlotMs(tick.minute, tick.shard, 60'000 / options.shard_count);
  if (layout == Layout::kBelfry) {
    std::string phases = "{";
    for (size_t i = 0; i < options.intervals.size(); ++i) {
      const int32_t interval = options.intervals[i];
      if (i > 0) phases.push_back(',');
      phases += std::to_string(interval * 1440 + PositiveMod(tick.minute, interval));
    }
    phases.push_back('}');
    return {"{" + std::to_string(tick.shard) + "}", phases, std::to_string(slot)};  // $1 smallint[]
  }
  std::vector<std::string> params = {std::to_string(tick.shard), std::to_string(slot)};
  for (const int32_t interval : options.intervals) {
    params.push_back(std::to_string(interval));
    params.push_back(std::to_string(PositiveMod(tick.minute, interval)));
  }
  return params;
}

const char* StatementName(Layout layout) { return layout == Layout::kP44 ? "p44_tick" : "belfry_tick"; }

struct TickResult {
  double ms = 0;
  int64_t rows = 0;
  int64_t bytes = 0;        // sum of the field lengths read
  std::string first_value;  // the first row's first field (text results only)
};

// Runs one prepared statement and reads every field of every row.
TickResult RunStatement(PgConnection& conn, const std::string& name, const std::vector<std::string>& params,
                        int result_format) {
  const auto t0 = Clock::now();
  PGresult* r = conn.ExecPrepared(name, params, result_format);
  const int rows = PQntuples(r);
  const int fields = PQnfields(r);
  int64_t bytes = 0;
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < fields; ++j) bytes += PQgetlength(r, i, j) + (PQgetvalue(r, i, j)[0] == '{' ? 1 : 0);
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::string first_value = rows > 0 && fields > 0 && result_format == 0 ? PQgetvalue(r, 0, 0) : "";
  PQclear(r);
  return TickResult{ms, rows, bytes, std::move(first_value)};
}

TickResult RunTick(PgConnection& conn, Layout layout, const Tick& tick, const Options& options) {
  return RunStatement(conn, StatementName(layout), TickParams(layout, tick, options), 0);
}

// --breakdown: belfry's tick statement with its WHERE clause kept and smaller select lists, so
// that finding the rows, sending rows and sending bytes can be told apart.
struct BreakdownVariant {
  const char* name;
  const char* select;  // nullptr: belfry's own select list
  int result_format;
  bool counts;  // answers with the row count in one row, where the others return the rows
};
constexpr BreakdownVariant kBreakdownVariants[] = {
    {"count_only", "SELECT count(*)", 0, true},                       // scan and filter; one row sent
    {"one_int_per_row", "SELECT pg_column_size(details)", 0, false},  // every row sent, ~10 bytes each
    {"details_only", "SELECT details", 0, false},                     // every row with its jobDetails
    {"tick_columns_text", nullptr, 0, false},                         // belfry's statement as it runs
    {"tick_columns_binary", nullptr, 1, false},                       // the same, binary results
};

std::string BreakdownSql(const BreakdownVariant& v) {
  const std::string tick = pg_queries::kDueJobsSql;
  if (v.select == nullptr) return tick;
  const size_t from = tick.find(" FROM jobs ");
  if (from == std::string::npos) throw std::logic_error("kDueJobsSql has no ' FROM jobs '");
  return v.select + tick.substr(from);
}

std::string BreakdownStatementName(size_t i) { return "belfry_breakdown_" + std::to_string(i); }

// "EXECUTE name(p1, p2, ...)" with the parameters as quoted literals.
std::string ExecuteText(Layout layout, const Tick& tick, const Options& options) {
  std::string text = fmt::format("EXECUTE {}(", StatementName(layout));
  const std::vector<std::string> params = TickParams(layout, tick, options);
  for (size_t i = 0; i < params.size(); ++i) text += fmt::format("{}'{}'", i > 0 ? ", " : "", params[i]);
  return text + ")";
}

// "Bitmap Heap Scan > BitmapAnd(Bitmap Index Scan[p44_jobs_shard_idx], BitmapOr(16x ...))":
// the plan's shape without costs, InitPlans left out.
std::string PlanShape(const ordered_json& node) {
  std::string out = node.value("Node Type", std::string("?"));
  if (node.contains("Index Name")) out += "[" + node["Index Name"].get<std::string>() + "]";
  std::vector<std::string> children;
  if (node.contains("Plans")) {
    for (const auto& child : node["Plans"]) {
      if (child.value("Parent Relationship", std::string()) == "InitPlan") continue;
      children.push_back(PlanShape(child));
    }
  }
  if (children.empty()) return out;
  std::string inner;
  for (size_t i = 0; i < children.size();) {
    size_t j = i;
    while (j < children.size() && children[j] == children[i]) ++j;
    if (!inner.empty()) inner += ", ";
    inner += (j - i > 1 ? fmt::format("{}x ", j - i) : std::string()) + children[i];
    i = j;
  }
  return out + "(" + inner + ")";
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct LayoutStats {
  std::vector<double> latency_ms;
  std::vector<int64_t> rows;
  int64_t bytes = 0;
};

ordered_json StatsJson(const LayoutStats& s) {
  double sum = 0;
  for (double v : s.latency_ms) sum += v;
  double rows = 0;
  for (int64_t r : s.rows) rows += static_cast<double>(r);
  const double n = static_cast<double>(std::max<size_t>(1, s.latency_ms.size()));
  ordered_json j;
  j["ticks"] = s.latency_ms.size();
  j["rows_per_tick_mean"] = std::round(rows / n * 10) / 10;
  j["result_kb_per_tick_mean"] = std::round(static_cast<double>(s.bytes) / n / 1024 * 10) / 10;
  j["p50_ms"] = Percentile(s.latency_ms, 50);
  j["p99_ms"] = Percentile(s.latency_ms, 99);
  j["max_ms"] = Percentile(s.latency_ms, 100);
  j["mean_ms"] = sum / n;
  return j;
}

// ---------------------------------------------------------------------------------------------

class QueryLayoutBench final {
 public:
  explicit QueryLayoutBench(Options options)
      : options_(std::move(options)),
        now_(std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count()),
        factory_(options_, now_) {}

  ordered_json Run() {
    ordered_json summary;
    summary["tool"] = "query_layout";
    summary["host"] = loadtest::HostSnapshot();
    summary["database"] = options_.database;
    summary["jobs"] = options_.jobs;
    summary["ticks"] = options_.ticks;
    summary["shard_count"] = options_.shard_count;
    summary["interval_mix"] = factory_.mix().ToString();
    summary["expected_rows_per_tick"] =
        std::round(static_cast<double>(options_.jobs) * 0.98 * factory_.mix().FiringsPerJobMinute() /
                   options_.shard_count);
    summary["details_bytes"] = options_.details_bytes;
    summary["seed"] = options_.seed;

    summary["reused_database"] = options_.reuse;
    if (!options_.reuse) CreateDatabase();
    MeasureAll(&summary);
    if (!options_.keep) {
      PgConnection admin(options_.database_url, "");
      admin.Exec("DROP DATABASE IF EXISTS " + options_.database);
    }
    summary["database_kept"] = options_.keep;
    summary["row_count_mismatches_total"] = mismatches_;
    summary["host"] = loadtest::HostSnapshot();  // again, so the load average covers the run
    return summary;
  }

 private:
  void MeasureAll(ordered_json* summary) {
    PgConnection conn(options_.database_url, options_.database);
    (*summary)["server_version"] = conn.ExecScalar("SHOW server_version");
    (*summary)["shared_buffers"] = conn.ExecScalar("SHOW shared_buffers");
    (*summary)["work_mem"] = conn.ExecScalar("SHOW work_mem");
    if (!options_.reuse) CreateSchemas(conn);
    (*summary)["migrations"] = migrations_applied_;
    if (options_.reuse) {
      // The database holds jobs 0..jobs-1 as a run with the same --jobs and --seed loaded them.
      for (int64_t n = 0; n < options_.jobs; ++n) live_.push_back(static_cast<uint64_t>(n));
      next_n_ = static_cast<uint64_t>(options_.jobs);
    } else {
      (*summary)["load_seconds"] = Load();
    }
    Log("VACUUM ANALYZE both tables ...");
    conn.Exec("VACUUM (ANALYZE) p44_jobs");
    conn.Exec("VACUUM (ANALYZE) jobs");
    PrepareStatements(conn);
    const std::vector<Tick> ticks = SampleTicks();

    ordered_json phases = ordered_json::array();
    phases.push_back(Measure(conn, ticks, "fresh"));
    if (options_.breakdown) (*summary)["breakdown_fresh"] = Breakdown(conn, ticks);
    if (options_.churn_percent > 0) {
      const auto t0 = Clock::now();
      ordered_json churn = Churn();
      churn["seconds"] = std::chrono::duration<double>(Clock::now() - t0).count();
      if (options_.churn_vacuum) {
        Log("VACUUM (plain) both tables ...");
        conn.Exec("VACUUM p44_jobs");
        conn.Exec("VACUUM jobs");
      }
      Log("ANALYZE both tables (no VACUUM FULL, no REINDEX) ...");
      conn.Exec("ANALYZE p44_jobs");
      conn.Exec("ANALYZE jobs");
      ordered_json after = Measure(conn, ticks, "after_churn");
      after["churn"] = churn;
      phases.push_back(after);
    }
    (*summary)["phases"] = phases;
  }

  static void Log(const std::string& line) { fmt::print(stderr, "{}\n", line); }

  // Each variant of kBreakdownVariants on the same ticks, interleaved (the first variant rotates
  // from tick to tick), belfry's layout only.
  ordered_json Breakdown(PgConnection& conn, const std::vector<Tick>& ticks) {
    constexpr size_t kVariants = std::size(kBreakdownVariants);
    Log(fmt::format("breakdown: {} variants of belfry's tick statement, {} ticks ...", kVariants, options_.ticks));
    for (size_t v = 0; v < kVariants; ++v) conn.Prepare(BreakdownStatementName(v), BreakdownSql(kBreakdownVariants[v]));
    LayoutStats stats[kVariants];
    int64_t mismatches = 0;
    for (size_t i = 0; i < ticks.size(); ++i) {
      const std::vector<std::string> params = TickParams(Layout::kBelfry, ticks[i], options_);
      int64_t rows[kVariants] = {};
      for (size_t k = 0; k < kVariants; ++k) {
        const size_t v = (i + k) % kVariants;
        const TickResult r =
            RunStatement(conn, BreakdownStatementName(v), params, kBreakdownVariants[v].result_format);
        rows[v] = kBreakdownVariants[v].counts ? std::stoll(r.first_value) : r.rows;
        if (i < static_cast<size_t>(options_.warmup_ticks)) continue;
        stats[v].latency_ms.push_back(r.ms);
        stats[v].rows.push_back(r.rows);
        stats[v].bytes += r.bytes;
      }
      for (size_t v = 1; v < kVariants; ++v) {
        if (rows[v] != rows[0]) {
          ++mismatches;
          break;
        }
      }
    }
    mismatches_ += mismatches;
    ordered_json j = ordered_json::array();
    for (size_t v = 0; v < kVariants; ++v) {
      ordered_json row = StatsJson(stats[v]);
      row["variant"] = kBreakdownVariants[v].name;
      row["sql"] = BreakdownSql(kBreakdownVariants[v]);
      row["result_format"] = kBreakdownVariants[v].result_format == 0 ? "text" : "binary";
      fmt::print(stderr, "  {:<20} rows/tick {:>8.1f}  kB/tick {:>8.1f}  p50 {:>7.2f} ms  p99 {:>7.2f} ms\n",
                 kBreakdownVariants[v].name, row["rows_per_tick_mean"].get<double>(),
                 row["result_kb_per_tick_mean"].get<double>(), row["p50_ms"].get<double>(),
                 row["p99_ms"].get<double>());
      j.push_back(row);
    }
    if (mismatches > 0) {
      Log(fmt::format("breakdown: {} ticks where the variants disagreed on the row count", mismatches));
    }
    return j;
  }

  void CreateDatabase() {
    static const std::regex kSafeName("^[a-z_][a-z0-9_]*$");
    if (!std::regex_match(options_.database, kSafeName)) {
      throw std::invalid_argument("--database must match [a-z_][a-z0-9_]*");
    }
    if (options_.database == "belfry") throw std::invalid_argument("refusing to use the belfry database");
    PgConnection admin(options_.database_url, "");
    Log(fmt::format("creating database {} ...", options_.database));
    admin.Exec("DROP DATABASE IF EXISTS " + options_.database);
    admin.Exec("CREATE DATABASE " + options_.database);
  }

  void CreateSchemas(PgConnection& conn) {
    conn.Exec(kP44Schema);
    std::vector<std::filesystem::path> files;
    static const std::regex kMigrationName("^[0-9]{4}_.*\\.sql$");
    for (const auto& entry : std::filesystem::directory_iterator(options_.migrations_dir)) {
      if (std::regex_match(entry.path().filename().string(), kMigrationName)) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw std::runtime_error("no migrations found in " + options_.migrations_dir);
    for (const auto& file : files) {
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      conn.Exec(text.str());
      migrations_applied_.push_back(file.filename().string());
    }
  }

  double Load() {
    const auto t0 = Clock::now();
    PgConnection p44(options_.database_url, options_.database);
    PgConnection belfry(options_.database_url, options_.database);
    p44.BeginCopyIn(std::string("COPY p44_jobs ") + kCopyColumns + " FROM STDIN");
    belfry.BeginCopyIn(std::string("COPY jobs ") + kCopyColumns + " FROM STDIN");
    std::string chunk;
    auto last_log = Clock::now();
    for (int64_t n = 0; n < options_.jobs; ++n) {
      factory_.AppendCopyLine(factory_.Make(static_cast<uint64_t>(n)), &chunk);
      live_.push_back(static_cast<uint64_t>(n));
      if (chunk.size() > (1 << 20)) {
        p44.PutCopyData(chunk);
        belfry.PutCopyData(chunk);
        chunk.clear();
        if (Clock::now() - last_log > std::chrono::seconds(2)) {
          last_log = Clock::now();
          const double s = std::chrono::duration<double>(last_log - t0).count();
          fmt::print(stderr, "  loading: {}/{} jobs, {:.0f} rows/s\n", n + 1, options_.jobs, (n + 1) / s);
        }
      }
    }
    p44.PutCopyData(chunk);
    belfry.PutCopyData(chunk);
    p44.EndCopyIn();
    belfry.EndCopyIn();
    next_n_ = static_cast<uint64_t>(options_.jobs);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    Log(fmt::format("loaded {} jobs into both tables in {:.1f} s", options_.jobs, seconds));
    return seconds;
  }

  void PrepareStatements(PgConnection& conn) {
    conn.Prepare(StatementName(Layout::kBelfry), pg_queries::kDueJobsSql);
    conn.Prepare(StatementName(Layout::kP44), P44TickSql(options_.intervals.size()));
  }

  // Ticks spread over a day of minutes from now and over all shards, so every interval's
  // offsets vary; the same list serves both layouts and both phases.
  std::vector<Tick> SampleTicks() const {
    std::mt19937_64 rng(options_.seed ^ 0x7469636b73ULL);
    const int64_t base = EpochMinuteOf(now_) + 1;
    std::vector<Tick> ticks;
    for (int i = 0; i < options_.ticks + options_.warmup_ticks; ++i) {
      ticks.push_back(Tick{static_cast<int32_t>(rng() % static_cast<uint64_t>(options_.shard_count)),
                           base + static_cast<int64_t>(rng() % 1440)});
    }
    return ticks;
  }

  ordered_json Measure(PgConnection& conn, const std::vector<Tick>& ticks, const std::string& phase) {
    Log(fmt::format("measuring {} ticks per layout ({}) ...", options_.ticks, phase));
    LayoutStats stats[2];
    int64_t mismatches = 0;
    for (size_t i = 0; i < ticks.size(); ++i) {
      const bool warmup = i < static_cast<size_t>(options_.warmup_ticks);
      // Alternate which layout goes first, so neither always runs on the other's warm cache.
      const Layout order[2] = {i % 2 == 0 ? Layout::kP44 : Layout::kBelfry,
                               i % 2 == 0 ? Layout::kBelfry : Layout::kP44};
      int64_t rows[2] = {0, 0};
      for (const Layout layout : order) {
        const TickResult r = RunTick(conn, layout, ticks[i], options_);
        const int idx = layout == Layout::kP44 ? 0 : 1;
        rows[idx] = r.rows;
        if (!warmup) {
          stats[idx].latency_ms.push_back(r.ms);
          stats[idx].rows.push_back(r.rows);
          stats[idx].bytes += r.bytes;
        }
      }
      if (rows[0] != rows[1]) ++mismatches;
    }

    ordered_json j;
    j["phase"] = phase;
    j["p44"] = StatsJson(stats[0]);
    j["belfry"] = StatsJson(stats[1]);
    j["ratio_p44_over_belfry"] = {
        {"p50", j["p44"]["p50_ms"].get<double>() / std::max(1e-9, j["belfry"]["p50_ms"].get<double>())},
        {"p99", j["p44"]["p99_ms"].get<double>() / std::max(1e-9, j["belfry"]["p99_ms"].get<double>())}};
    j["row_count_mismatches"] = mismatches;
    mismatches_ += mismatches;

    // Plan shapes (after the timed runs, so the plan cache is in its steady state).
    const Tick& probe = ticks[options_.warmup_ticks];
    for (const Layout layout : {Layout::kP44, Layout::kBelfry}) {
      const std::string text =
          conn.ExecScalar("EXPLAIN (FORMAT JSON) " + ExecuteText(layout, probe, options_));
      j["plans"][LayoutName(layout)] = PlanShape(ordered_json::parse(text)[0]["Plan"]);
    }
    if (options_.explain) {
      for (const Layout layout : {Layout::kP44, Layout::kBelfry}) {
        std::string text;
        for (const auto& row :
             conn.Exec("EXPLAIN (ANALYZE, BUFFERS) " + ExecuteText(layout, probe, options_))) {
          text += row[0] + "\n";
        }
        j["explain"][LayoutName(layout)] = text;
      }
    }
    for (const auto& [table, name] :
         {std::pair<const char*, const char*>{"p44_jobs", "p44"}, {"jobs", "belfry"}}) {
      // Summed over the table's partitions, if it has any (pg_partition_tree lists a plain table
      // alone; a partitioned parent has no storage of its own).
      const auto rows = conn.Exec(
          fmt::format("SELECT sum(pg_relation_size(t.relid)), sum(pg_indexes_size(t.relid)), "
                      "coalesce(sum(s.n_live_tup), 0), coalesce(sum(s.n_dead_tup), 0) "
                      "FROM (SELECT relid FROM pg_partition_tree('{0}') UNION SELECT '{0}'::regclass) AS t "
                      "LEFT JOIN pg_stat_user_tables AS s ON s.relid = t.relid",
                      table));
      j["tables"][name] = {{"table", table},
                           {"heap_mb", std::stod(rows[0][0]) / 1048576.0},
                           {"indexes_mb", std::stod(rows[0][1]) / 1048576.0},
                           {"live_tuples", std::stoll(rows[0][2])},
                           {"dead_tuples", std::stoll(rows[0][3])}};
    }
    PrintTable(j);
    return j;
  }

  static void PrintTable(const ordered_json& j) {
    fmt::print(stderr, "\n{:<12} {:<7} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9}\n", "phase", "layout", "ticks",
               "rows/tick", "p50 ms", "p99 ms", "max ms", "mean ms");
    for (const char* layout : {"p44", "belfry"}) {
      const auto& s = j[layout];
      fmt::print(stderr, "{:<12} {:<7} {:>6} {:>10.1f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}\n",
                 j["phase"].get<std::string>(), layout, s["ticks"].get<int64_t>(),
                 s["rows_per_tick_mean"].get<double>(), s["p50_ms"].get<double>(), s["p99_ms"].get<double>(),
                 s["max_ms"].get<double>(), s["mean_ms"].get<double>());
    }
    fmt::print(stderr, "ratio p44/belfry: p50 {:.1f}x, p99 {:.1f}x; row-count mismatches: {}\n",
               j["ratio_p44_over_belfry"]["p50"].get<double>(),
               j["ratio_p44_over_belfry"]["p99"].get<double>(), j["row_count_mismatches"].get<int64_t>());
    for (const char* layout : {"p44", "belfry"}) {
      fmt::print(stderr, "plan {:<7} {}\n", layout, j["plans"][layout].get<std::string>());
    }
    for (const char* layout : {"p44", "belfry"}) {
      const auto& t = j["tables"][layout];
      fmt::print(stderr, "size {:<7} heap {:.0f} MB, indexes {:.0f} MB, dead tuples {}\n", layout,
                 t["heap_mb"].get<double>(), t["indexes_mb"].get<double>(), t["dead_tuples"].get<int64_t>());
    }
    if (j.contains("explain")) {
      for (const char* layout : {"p44", "belfry"}) {
        fmt::print(stderr, "\nEXPLAIN (ANALYZE, BUFFERS), {} layout:\n{}", layout,
                   j["explain"][layout].get<std::string>());
      }
    }
    fmt::print(stderr, "\n");
  }

  // Applies churn_percent% of the job count as random operations, identically to both tables:
  // 20% details-only updates, 20% interval/offset changes, 30% deletes, 30% inserts, in
  // transactions of 1000 operations per table.
  ordered_json Churn() {
    const int64_t total =
        static_cast<int64_t>(static_cast<double>(options_.jobs) * options_.churn_percent / 100.0);
    Log(fmt::format("churn: {} operations on each layout ...", total));
    PgConnection conn(options_.database_url, options_.database);
    std::mt19937_64 rng(options_.seed ^ 0x636875726eULL);
    int64_t counts[4] = {0, 0, 0, 0};  // details, schedule, delete, insert
    const auto t0 = Clock::now();
    auto last_log = t0;
    for (int64_t done = 0; done < total;) {
      const int64_t batch = std::min<int64_t>(1000, total - done);
      // Every statement names the job's shard as well as its id, as belfry's own writes do (its
      // jobs table is partitioned by shard); project44's table gets the same statements.
      std::vector<std::string> detail_ids, detail_shards, details, sched_ids, sched_shards, intervals,
          offsets, delete_ids, delete_shards;
      std::string inserts;
      for (int64_t k = 0; k < batch; ++k) {
        const uint64_t r = rng() % 100;
        if (r < 60 && !live_.empty()) {
          const size_t idx = rng() % live_.size();
          const SyntheticJob job = factory_.Make(live_[idx]);
          if (r < 20) {
            detail_ids.push_back(job.id);
            detail_shards.push_back(std::to_string(job.shard));
            details.push_back(loadtest::MakeJobDetails(rng(), options_.details_bytes));
            ++counts[0];
          } else if (r < 40) {
            std::mt19937_64 local(rng());
            const int32_t interval = factory_.mix().Pick(local);
            sched_ids.push_back(job.id);
            sched_shards.push_back(std::to_string(job.shard));
            intervals.push_back(std::to_string(interval));
            offsets.push_back(std::to_string(local() % static_cast<uint64_t>(interval)));
            ++counts[1];
          } else {
            delete_ids.push_back(job.id);
            delete_shards.push_back(std::to_string(job.shard));
            live_[idx] = live_.back();
            live_.pop_back();
            ++counts[2];
          }
        } else {
          const uint64_t n = next_n_++;
          factory_.AppendCopyLine(factory_.Make(n), &inserts);
          live_.push_back(n);
          ++counts[3];
        }
      }
      for (const char* table : {"p44_jobs", "jobs"}) {
        conn.Exec("BEGIN");
        // A job can be picked twice in one batch (or deleted after an update): fine for both.
        if (!detail_ids.empty()) {
          conn.Exec(fmt::format(
              "UPDATE {} AS t SET details = u.d, updated_at = now() "
              "FROM unnest({}::text[], {}::smallint[], {}::text[]) AS u(id, s, d) "
              "WHERE t.shard = u.s AND t.id = u.id",
              table, ArrayLiteral(detail_ids), ArrayLiteral(detail_shards), ArrayLiteral(details)));
        }
        if (!sched_ids.empty()) {
          conn.Exec(
              fmt::format("UPDATE {} AS t SET interval_minutes = u.i, offset_minutes = u.o, "
                          "updated_at = now() "
                          "FROM unnest({}::text[], {}::smallint[], {}::int[], {}::int[]) AS u(id, s, i, o) "
                          "WHERE t.shard = u.s AND t.id = u.id",
                          table, ArrayLiteral(sched_ids), ArrayLiteral(sched_shards), ArrayLiteral(intervals),
                          ArrayLiteral(offsets)));
        }
        if (!delete_ids.empty()) {
          conn.Exec(
              fmt::format("DELETE FROM {} AS t USING unnest({}::text[], {}::smallint[]) AS u(id, s) "
                          "WHERE t.shard = u.s AND t.id = u.id",
                          table, ArrayLiteral(delete_ids), ArrayLiteral(delete_shards)));
        }
        if (!inserts.empty()) {
          conn.BeginCopyIn(fmt::format("COPY {} {} FROM STDIN", table, kCopyColumns));
          conn.PutCopyData(inserts);
          conn.EndCopyIn();
        }
        conn.Exec("COMMIT");
      }
      done += batch;
      if (Clock::now() - last_log > std::chrono::seconds(2)) {
        last_log = Clock::now();
        const double s = std::chrono::duration<double>(last_log - t0).count();
        fmt::print(stderr, "  churn: {}/{} operations, {:.0f} ops/s per layout\n", done, total, done / s);
      }
    }
    ordered_json j;
    j["percent"] = options_.churn_percent;
    j["operations"] = total;
    j["details_updates"] = counts[0];
    j["schedule_updates"] = counts[1];
    j["deletes"] = counts[2];
    j["inserts"] = counts[3];
    j["live_jobs"] = live_.size();
    j["vacuum_after"] = options_.churn_vacuum ? "plain VACUUM" : "none (ANALYZE only)";
    return j;
  }

  // A quoted SQL array literal: '{"a","b"}' with " and \ escaped for the array parser and
  // ' doubled for the string literal.
  static std::string ArrayLiteral(const std::vector<std::string>& values) {
    std::string out = "'{";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out.push_back(',');
      out.push_back('"');
      for (const char c : values[i]) {
        if (c == '"' || c == '\\') out.push_back('\\');
        if (c == '\'') out.push_back('\'');
        out.push_back(c);
      }
      out.push_back('"');
    }
    return out + "}'";
  }

  const Options options_;
  const EpochMs now_;
  const JobFactory factory_;
  std::vector<uint64_t> live_;  // job numbers currently in both tables
  int64_t mismatches_ = 0;      // ticks whose statements disagreed on the row count, all phases
  uint64_t next_n_ = 0;
  std::vector<std::string> migrations_applied_;
};

}  // namespace
}  // namespace belfry::bench

int main(int argc, char** argv) {
  belfry::bench::Options options;
  if (const char* url = std::getenv("BELFRY_DATABASE_URL")) options.database_url = url;
  if (options.database_url.empty())
    options.database_url = "postgresql://belfry:belfry@127.0.0.1:55432/belfry";

  CLI::App app{"query_layout: tick-query latency, project44's layout vs belfry's, on the same jobs"};
  app.add_option("--database-url", options.database_url,
                 "server to use (its database is only used to create/drop the throwaway one; env "
                 "BELFRY_DATABASE_URL)");
  app.add_option("--database", options.database, "throwaway database to (re)create")->capture_default_str();
  app.add_option("--migrations", options.migrations_dir, "belfry's migrations directory")
      ->capture_default_str();
  app.add_option("--jobs", options.jobs, "jobs loaded into each layout")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000'000));
  app.add_option("--ticks", options.ticks, "timed (shard, minute) ticks per layout and phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--warmup-ticks", options.warmup_ticks, "untimed ticks first")->capture_default_str();
  app.add_option(
         "--churn", options.churn_percent,
         "after measuring, apply this % of the job count as random updates/deletes/inserts and measure again")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0));
  app.add_flag("--churn-vacuum", options.churn_vacuum,
               "run a plain VACUUM (as autovacuum would) after the churn");
  app.add_option("--mix", options.mix, "interval mix, INTERVAL:WEIGHT,...")->capture_default_str();
  app.add_option("--details-bytes", options.details_bytes, "jobDetails size")->capture_default_str();
  app.add_option("--seed", options.seed, "random seed")->capture_default_str();
  app.add_flag("--keep", options.keep, "keep the database afterwards");
  app.add_flag("--reuse", options.reuse,
               "measure a database a --keep run with the same --jobs and --seed loaded and never churned "
               "(skips creating and loading it)");
  app.add_flag("--explain", options.explain, "include EXPLAIN (ANALYZE, BUFFERS) of one tick per layout");
  app.add_flag("--breakdown", options.breakdown,
               "after the fresh phase, time belfry's tick statement with smaller select lists (count only, "
               "one int per row, details only) and with binary results, on the same ticks");
  CLI11_PARSE(app, argc, argv);

  try {
    belfry::bench::QueryLayoutBench bench(options);
    const nlohmann::ordered_json summary = bench.Run();
    fmt::print("{}\n", summary.dump(2));
    // Statements that disagree on which jobs are due make the timings meaningless.
    if (summary["row_count_mismatches_total"].get<int64_t>() > 0) {
      fmt::print(stderr, "query_layout: the statements disagreed on the due rows (row_count_mismatches)\n");
      return 1;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "query_layout: {}\n", e.what());
    return 1;
  }
  return 0;
}
