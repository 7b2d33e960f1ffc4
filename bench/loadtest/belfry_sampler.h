// BelfrySampler: what `verify` samples from the node under test while it runs, into a
// WindowReport: belfry's VmRSS every `rss_every_ms` (with a pid), and at each window boundary
// the tick query's quantiles over the window (belfry_tick_query_seconds bucket deltas from
// /metrics, with an admin address) and the jobs partitions' dead tuples and autovacuum runs
// (pg_stat_user_tables). Every sample that cannot be taken is left out, never fatal.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "belfry/clock.h"
#include "loadtest/metrics_scrape.h"
#include "loadtest/pg_connection.h"
#include "loadtest/window_report.h"

namespace belfry::loadtest {

class BelfrySampler final {
 public:
  // `admin` "" and `pid` 0 turn those samples off. `conn` and `report` must outlive this.
  BelfrySampler(std::string admin, pid_t pid, int64_t rss_every_ms, PgConnection* conn, WindowReport* report);

  // Takes every sample due by `now`. Call it often (every loop turn); it is cheap when none is.
  void Poll(EpochMs now);
  // Closes the last window at `now` (after the window's last slot).
  void Finish(EpochMs now);

 private:
  struct TableCounters {
    int64_t dead = -1, live = -1, autovacuums = -1, autoanalyzes = -1;
  };
  TableCounters ReadTableCounters();
  void CloseWindow(size_t window);

  const std::string admin_;
  const pid_t pid_;
  const int64_t rss_every_ms_;
  PgConnection* const conn_;
  WindowReport* const report_;
  EpochMs next_rss_ms_ = 0;
  size_t next_window_ = 0;  // the window whose start is the next boundary
  CumulativeBuckets last_buckets_;
  TableCounters last_table_;
};

}  // namespace belfry::loadtest
