#include "loadtest/belfry_sampler.h"

#include <fmt/format.h>

#include "loadtest/belfry_process.h"

namespace belfry::loadtest {

BelfrySampler::BelfrySampler(std::string admin, pid_t pid, int64_t rss_every_ms, PgConnection* conn,
                             WindowReport* report)
    : admin_(std::move(admin)), pid_(pid), rss_every_ms_(rss_every_ms), conn_(conn), report_(report) {}

BelfrySampler::TableCounters BelfrySampler::ReadTableCounters() {
  TableCounters c;
  try {
    conn_->Exec("SELECT pg_stat_clear_snapshot()");
    const PgRows rows = conn_->Exec(
        "SELECT coalesce(sum(n_dead_tup), 0), coalesce(sum(n_live_tup), 0), coalesce(sum(autovacuum_count), "
        "0), "
        "coalesce(sum(autoanalyze_count), 0) FROM pg_stat_user_tables WHERE relname LIKE 'jobs%'");
    c.dead = std::stoll(rows[0][0]);
    c.live = std::stoll(rows[0][1]);
    c.autovacuums = std::stoll(rows[0][2]);
    c.autoanalyzes = std::stoll(rows[0][3]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "verify: pg_stat_user_tables: {}\n", e.what());
  }
  return c;
}

void BelfrySampler::CloseWindow(size_t window) {
  // Sample first, then attribute the deltas since the previous boundary to `window`.
  const CumulativeBuckets buckets =
      admin_.empty() ? CumulativeBuckets{}
                     : ParseHistogramBuckets(FetchMetricsText(admin_), "belfry_tick_query_seconds");
  const TableCounters table = ReadTableCounters();
  if (window < report_->windows()) {
    if (!buckets.empty() && !last_buckets_.empty() && buckets.size() == last_buckets_.size()) {
      WindowReport::TickQuery q;
      q.count = buckets.back().second - last_buckets_.back().second;
      q.p50_ms = QuantileBetween(last_buckets_, buckets, 0.50) * 1000;
      q.p99_ms = QuantileBetween(last_buckets_, buckets, 0.99) * 1000;
      q.p999_ms = QuantileBetween(last_buckets_, buckets, 0.999) * 1000;
      if (q.count <= 0) q.p50_ms = q.p99_ms = q.p999_ms = -1;
      report_->SetTickQuery(window, q);
    }
    if (table.dead >= 0 && last_table_.dead >= 0) {
      report_->SetTableStats(window, WindowReport::TableStats{table.dead, table.live,
                                                              table.autovacuums - last_table_.autovacuums,
                                                              table.autoanalyzes - last_table_.autoanalyzes});
    }
  }
  last_buckets_ = buckets;
  last_table_ = table;
}

void BelfrySampler::Poll(EpochMs now) {
  if (pid_ > 0 && now >= next_rss_ms_) {
    if (const int64_t kb = CurrentRssKb(pid_); kb >= 0) report_->AddRss(now, kb);
    next_rss_ms_ = now + rss_every_ms_;
  }
  // Boundary k is the start of window k; crossing it closes window k - 1.
  while (next_window_ < report_->windows() && now >= report_->WindowStart(next_window_)) {
    if (next_window_ == 0) {
      CloseWindow(report_->windows());  // the baseline only
    } else {
      CloseWindow(next_window_ - 1);
    }
    ++next_window_;
  }
}

void BelfrySampler::Finish(EpochMs now) {
  Poll(now);
  if (next_window_ > 0) CloseWindow(next_window_ - 1);
}

}  // namespace belfry::loadtest
