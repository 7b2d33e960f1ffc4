// PgDueQueryStream: runs the tick query on its own raw libpq connection through cursors, fetched
// a bounded number of rows at a time, so that a shard-minute of any size streams through in
// bounded memory.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "belfry/job.h"
#include "belfry/job_store.h"
#include "belfry/status.h"
#include "core/calendar_schedule.h"

struct pg_conn;
struct pg_result;

namespace belfry {
namespace pg_queries {
struct DueCursor;
}  // namespace pg_queries

// The interval phases as a bigint[] literal, "{1441,2883,...}": interval * 1440 + offset for each
// (interval, offset) of the terms, the same expression as the jobs.phase generated column.
// Invalid for an interval outside 1..1440 or an offset outside [0, interval).
StatusOr<std::string> PhaseArrayLiteral(const std::vector<PhaseTerm>& terms);

// The full phase set of a query: PhaseArrayLiteral(q.terms) plus -m for every minute m in
// [q.first_minute, q.last_minute] (the one-shots' phase is -run_minute).
StatusOr<std::string> PhaseArrayLiteral(const DueQuery& q);

// Thread-compatible: one instance per thread. Connects lazily; a connection fault closes the
// connection and the next call reconnects.
class PgDueQueryStream final {
 public:
  explicit PgDueQueryStream(std::string database_url);
  PgDueQueryStream(const PgDueQueryStream&) = delete;
  PgDueQueryStream& operator=(const PgDueQueryStream&) = delete;
  ~PgDueQueryStream();

  // Calls fn once per due job of `q`, as the rows arrive. With q.first_minute == q.last_minute
  // it runs the normal tick query (due_minute = q.last_minute for every row); otherwise the
  // coalesced range query. Read-only. Returns Invalid for a malformed query (an interval outside
  // 1..1440, an offset outside [0, interval)), Retryable on connection faults (fn may have seen a
  // prefix of the rows).
  // REQUIRES: fn does not throw; if it does, the connection is closed and the exception propagates.
  Status ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn);

  // How far this server's write-ahead log goes, in bytes since 0/0: on a hot standby, the
  // position it has replayed (what its next snapshot will see); on a primary, the position of
  // its next WAL record (it sees every commit). One statement, outside any transaction.
  StatusOr<int64_t> ReplayedPosition();

  void Disconnect();

  // Zones named in cron_zones that this process's tz database does not know (their cron jobs
  // cannot fire on this node until it is given that tzdata). Read by the same thread.
  int64_t unknown_zones() const { return unknown_zones_; }

 private:
  // Inside the open transaction: re-reads cron_zones when its row count differs from what this
  // stream knows. Sets *any to whether there are zones.
  Status RefreshZones(bool* any);
  Status Connect();
  // Translates the connection's current error; closes the connection when it is broken.
  Status ConnectionError(const char* what);
  // Translates a failed result (nullptr: the connection's error); closes the connection when
  // the error is retryable, so the next call starts afresh.
  Status ResultError(pg_result* res, const char* what);
  // Runs a statement that returns no rows (BEGIN, COMMIT, ROLLBACK).
  Status Command(const char* sql, const char* what);
  // Declares the cursor `declare_sql` (inside the open transaction) and fetches every row into fn.
  Status RunCursor(const pg_queries::DueCursor& cursor, int n_params, const char* const* values, const DueQuery& q,
                   const std::function<void(const DueJob&)>& fn);

  const std::string database_url_;
  pg_conn* conn_ = nullptr;
  std::vector<ZoneEntry> zones_;  // the known zones of cron_zones, resolved
  int64_t zone_rows_ = 0;         // cron_zones' row count when zones_ was read
  int64_t unknown_zones_ = 0;
};

}  // namespace belfry
