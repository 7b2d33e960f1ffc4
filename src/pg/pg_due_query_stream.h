// PgDueQueryStream: runs the tick query on its own raw libpq connection through cursors, fetched
// a bounded number of rows at a time, so that a shard-minute of any size streams through in
// bounded memory.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/job.h"
#include "belfry/job_store.h"
#include "belfry/status.h"
#include "core/calendar_schedule.h"
#include "pg/connection_options.h"

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

// The statements of one tick query and their parameters, in the order they run: what
// PgDueQueryStream::ForEachDueJob declares as cursors and ExplainDueQuery explains (one builder,
// so that explain shows the tick's query). `with_calendar`: cron_zones has a zone (the
// statements then take the calendar terms of `zones`, the resolved ones, for every minute of the
// query). Invalid for a malformed query, as PhaseArrayLiteral.
struct DueStatements {
  std::vector<const pg_queries::DueCursor*> cursors;
  std::vector<std::string> values;  // $1, $2, ... as text
  std::vector<const char*> names;   // what each parameter is, for explain's output
};
StatusOr<DueStatements> BuildDueStatements(const DueQuery& q, bool with_calendar, const std::vector<ZoneEntry>& zones);

// A zone of cron_zones that this process's tz database does not know.
struct UnknownZone {
  int32_t id = 0;
  std::string name;
};

// Thread-compatible: one instance per thread. Connects lazily; a connection fault closes the
// connection and the next call reconnects.
class PgDueQueryStream final {
 public:
  // Zones of cron_zones are looked up in `time_zones`, which must outlive the stream.
  PgDueQueryStream(PgConninfo conninfo, const TimeZoneDatabase& time_zones);
  PgDueQueryStream(const PgDueQueryStream&) = delete;
  PgDueQueryStream& operator=(const PgDueQueryStream&) = delete;
  ~PgDueQueryStream();

  // Called by a tick query, on its thread, for each zone this process's tz database lacks that
  // holds slot-planned calendar jobs in the query's stored shards: their number. The query skips
  // them (it cannot compute their zone's local times). Must not throw.
  using UnknownZoneHandler = std::function<void(std::string_view zone, int64_t jobs)>;
  void SetUnknownZoneHandler(UnknownZoneHandler handler) { on_unknown_zone_ = std::move(handler); }

  // Calls fn once per due job of `q`, as the rows arrive. With q.first_minute == q.last_minute
  // it runs the normal tick query (due_minute = q.last_minute for every row); otherwise the
  // coalesced range query. Read-only. Returns Invalid for a malformed query (an interval outside
  // 1..1440, an offset outside [0, interval)), Retryable on connection faults (fn may have seen a
  // prefix of the rows).
  // REQUIRES: fn does not throw; if it does, the connection is closed and the exception propagates.
  Status ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn);

  // EXPLAIN (ANALYZE, BUFFERS) of the statements ForEachDueJob would run for `q`, with the same
  // parameters, in one READ ONLY REPEATABLE READ transaction as the tick's: first the parameters
  // ("-- $1 = {3} (stored shards)"), then per statement a "-- <what it reads>" line and its plan,
  // one plan line per line. Executes the query (read-only). Errors as ForEachDueJob's.
  StatusOr<std::string> ExplainDueQuery(const DueQuery& q);

  // How far this server's write-ahead log goes, in bytes since 0/0: on a hot standby, the
  // position it has replayed (what its next snapshot will see); on a primary, the position of
  // its next WAL record (it sees every commit). One statement, outside any transaction.
  StatusOr<int64_t> ReplayedPosition();

  void Disconnect();

  // Zones named in cron_zones that this process's tz database does not know (their cron jobs
  // cannot fire on this node until it is given that tzdata), as of the last query. Read by the
  // same thread.
  const std::vector<UnknownZone>& unknown_zones() const { return unknown_zones_; }

 private:
  // Begins the tick's transaction with `begin_sql` (kBeginTickSnapshotSql, or
  // kBeginExplainSnapshotSql) and, in the same round trip, counts cron_zones; re-reads them
  // when that count differs from what this stream knows. Sets *any to whether there are zones.
  Status BeginAndRefreshZones(const char* begin_sql, bool* any);
  // Begins the tick's transaction, reads the zones, builds q's statements and runs `body` on
  // them, then commits (rolls back after an error). Counts the jobs of unknown zones first.
  // REQUIRES: body does not throw, or the connection is closed and the exception propagates.
  Status InSnapshot(const DueQuery& q, const char* begin_sql,
                    const std::function<Status(const DueStatements&)>& body);
  // Inside the open transaction: reports the slot-planned jobs of unknown_zones_ in q's stored
  // shards to on_unknown_zone_. Does nothing without a handler or without unknown zones.
  Status ReportUnknownZones(const DueStatements& statements);
  Status Connect();
  // Translates the connection's current error; closes the connection when it is broken.
  Status ConnectionError(const char* what);
  // Translates a failed result (nullptr: the connection's error); closes the connection when
  // the error is retryable, so the next call starts afresh.
  Status ResultError(pg_result* res, const char* what);
  // Runs a statement that returns no rows (BEGIN, COMMIT, ROLLBACK).
  Status Command(const char* sql, const char* what);
  // Declares the cursor `declare_sql` (inside the open transaction) and fetches every row into fn.
  Status RunCursor(const pg_queries::DueCursor& cursor, const DueStatements& statements, const DueQuery& q,
                   const std::function<void(const DueJob&)>& fn);

  const PgConninfo conninfo_;
  const TimeZoneDatabase& time_zones_;
  pg_conn* conn_ = nullptr;
  std::vector<ZoneEntry> zones_;  // the known zones of cron_zones, resolved
  int64_t zone_rows_ = 0;         // cron_zones' row count when zones_ was read
  std::vector<UnknownZone> unknown_zones_;
  UnknownZoneHandler on_unknown_zone_;
};

}  // namespace belfry
