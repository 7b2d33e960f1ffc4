#include "pg/pg_due_query_stream.h"

#include <libpq-fe.h>

#include <charconv>
#include <memory>
#include <utility>

#include "core/slot_math.h"
#include "pg/array_literal.h"
#include "pg/connection_options.h"
#include "pg/pg_due_queries.h"
#include "pg/pg_shard_ledger_queries.h"
#include "pg/pg_status.h"

namespace belfry {
namespace {

struct PgResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResultPtr = std::unique_ptr<PGresult, PgResultDeleter>;

std::string IntText(int64_t v) {
  std::string s;
  AppendArrayElement(&s, v);
  return s;
}

std::string_view Value(const PGresult* res, int row, int col) {
  return std::string_view(PQgetvalue(res, row, col), static_cast<size_t>(PQgetlength(res, row, col)));
}

template <typename T>
T IntValue(const PGresult* res, int row, int col) {
  const std::string_view text = Value(res, row, col);
  T v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

}  // namespace

StatusOr<std::string> PhaseArrayLiteral(const std::vector<PhaseTerm>& terms) {
  std::string out = "{";
  for (const PhaseTerm& t : terms) {
    if (t.interval_minutes <= 0 || t.interval_minutes > kMinutesPerDay) {
      return Status::Invalid("due_query",
                             "interval " + std::to_string(t.interval_minutes) + " is outside 1.." + std::to_string(kMinutesPerDay));
    }
    for (int32_t offset : t.offsets) {
      if (offset < 0 || offset >= t.interval_minutes) {
        return Status::Invalid("due_query", "offset " + std::to_string(offset) + " is outside [0, " +
                                                std::to_string(t.interval_minutes) + ")");
      }
      if (out.size() > 1) out.push_back(',');
      AppendArrayElement(&out, PhaseKey(t.interval_minutes, offset));
    }
  }
  out.push_back('}');
  return out;
}

StatusOr<std::string> PhaseArrayLiteral(const DueQuery& q) {
  StatusOr<std::string> out = PhaseArrayLiteral(q.terms);
  if (!out.ok()) return out;
  if (q.last_minute < q.first_minute)
    return Status::Invalid("due_query", "last_minute is before first_minute");
  out->pop_back();  // '}'
  for (int64_t m = q.first_minute; m <= q.last_minute; ++m) {
    if (out->size() > 1) out->push_back(',');
    AppendArrayElement(&*out, -m);
  }
  out->push_back('}');
  return out;
}

PgDueQueryStream::PgDueQueryStream(PgConninfo conninfo, const TimeZoneDatabase& time_zones)
    : conninfo_(std::move(conninfo)), time_zones_(time_zones) {}

PgDueQueryStream::~PgDueQueryStream() { Disconnect(); }

void PgDueQueryStream::Disconnect() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
}

Status PgDueQueryStream::ConnectionError(const char* what) {
  const std::string message = conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory";
  Status st = StatusFromSqlState("", what, message);
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    Disconnect();
    return Status::Retryable(st.message());
  }
  return st;
}

Status PgDueQueryStream::Connect() {
  if (conn_ != nullptr) return Status::Ok();
  conn_ = PQconnectdb(conninfo_.str().c_str());
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) return ConnectionError("due query: connect");
  return Status::Ok();
}

StatusOr<int64_t> PgDueQueryStream::ReplayedPosition() {
  if (Status st = Connect(); !st.ok()) return st;
  PgResultPtr res(PQexec(conn_, pg_queries::kReplayedPositionSql));
  if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK) return ResultError(res.get(), "replay position");
  return IntValue<int64_t>(res.get(), 0, 0);
}

Status PgDueQueryStream::ResultError(PGresult* res, const char* what) {
  if (res == nullptr || PQstatus(conn_) != CONNECTION_OK) return ConnectionError(what);
  const char* sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  Status st = StatusFromSqlState(sqlstate != nullptr ? sqlstate : "", what, PQresultErrorMessage(res));
  if (st.retryable() || sqlstate == nullptr) {
    Disconnect();
    return Status::Retryable(st.message());
  }
  return st;
}

Status PgDueQueryStream::Command(const char* sql, const char* what) {
  PgResultPtr res(PQexec(conn_, sql));
  if (res == nullptr || PQresultStatus(res.get()) != PGRES_COMMAND_OK) return ResultError(res.get(), what);
  return Status::Ok();
}

namespace {

// The five (or, for a range, six) array parameters of the calendar statements.
struct TermArrays {
  std::string keys = "{", hour = "{", dom = "{", month = "{", dow = "{", minutes = "{";
};

TermArrays CalendarTermArrays(const std::vector<ZoneEntry>& zones, const DueQuery& q) {
  std::vector<CalendarTerm> terms;
  for (int64_t m = q.first_minute; m <= q.last_minute; ++m) AppendCalendarTerms(zones, m, &terms);
  TermArrays a;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (i > 0) {
      for (std::string* s : {&a.keys, &a.hour, &a.dom, &a.month, &a.dow, &a.minutes}) s->push_back(',');
    }
    AppendArrayElement(&a.keys, terms[i].key);
    AppendArrayElement(&a.hour, terms[i].hour_bit);
    AppendArrayElement(&a.dom, terms[i].dom_bit);
    AppendArrayElement(&a.month, terms[i].month_bit);
    AppendArrayElement(&a.dow, terms[i].dow_bit);
    AppendArrayElement(&a.minutes, terms[i].minute);
  }
  for (std::string* s : {&a.keys, &a.hour, &a.dom, &a.month, &a.dow, &a.minutes}) s->push_back('}');
  return a;
}

std::string StoredShardsLiteral(const DueQuery& q) {
  return q.stored_shards.empty() ? ArrayLiteral(std::vector<int32_t>{q.shard}) : ArrayLiteral(q.stored_shards);
}

}  // namespace

StatusOr<DueStatements> BuildDueStatements(const DueQuery& q, bool with_calendar,
                                           const std::vector<ZoneEntry>& zones) {
  StatusOr<std::string> phases = PhaseArrayLiteral(q);
  if (!phases.ok()) return phases.status();
  DueStatements out;
  auto add = [&out](std::string value, const char* name) {
    out.values.push_back(std::move(value));
    out.names.push_back(name);
  };
  add(StoredShardsLiteral(q), "stored shards");
  add(std::move(*phases), "phases");
  const bool range = q.first_minute != q.last_minute;
  const int64_t slot_offset_ms = static_cast<int64_t>(q.shard) * q.tick_ms;
  if (!range) {
    add(IntText(MinuteStartMs(q.last_minute) + slot_offset_ms), "slot, epoch ms");
  } else {
    add(IntText(q.first_minute), "first minute");
    add(IntText(q.last_minute), "last minute");
    add(IntText(slot_offset_ms), "slot offset, ms");
  }
  if (with_calendar) {
    TermArrays terms = CalendarTermArrays(zones, q);
    add(std::move(terms.keys), "calendar keys");
    add(std::move(terms.hour), "calendar hour bits");
    add(std::move(terms.dom), "calendar day-of-month bits");
    add(std::move(terms.month), "calendar month bits");
    add(std::move(terms.dow), "calendar weekday bits");
    if (range) add(std::move(terms.minutes), "calendar keys' minutes");
  }
  // A shard-minute is three statements (priority > 0, = 0, < 0: see pg_due_queries.h); a coalesced
  // range is one, sorted.
  if (range) {
    out.cursors = {with_calendar ? &pg_queries::kDueJobsRangeWithCronCursor : &pg_queries::kDueJobsRangeCursor};
  } else if (with_calendar) {
    out.cursors = {&pg_queries::kDueJobsHighWithCronCursor, &pg_queries::kDueJobsWithCronCursor,
                   &pg_queries::kDueJobsLowWithCronCursor};
  } else {
    out.cursors = {&pg_queries::kDueJobsHighCursor, &pg_queries::kDueJobsCursor, &pg_queries::kDueJobsLowCursor};
  }
  return out;
}

Status PgDueQueryStream::BeginAndRefreshZones(const char* begin_sql, bool* any) {
  PgResultPtr res(PQexec(conn_, begin_sql));
  if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK) {
    return ResultError(res.get(), "due query: begin and zones");
  }
  const int64_t rows = IntValue<int64_t>(res.get(), 0, 0);
  if (rows != zone_rows_) {
    PgResultPtr list(PQexec(conn_, pg_queries::kListCronZonesSql));
    if (list == nullptr || PQresultStatus(list.get()) != PGRES_TUPLES_OK) {
      return ResultError(list.get(), "due query: zones");
    }
    zones_.clear();
    unknown_zones_.clear();
    for (int r = 0; r < PQntuples(list.get()); ++r) {
      StatusOr<const TimeZone*> zone = LocateTimeZone(time_zones_, Value(list.get(), r, 1));
      if (!zone.ok()) {
        unknown_zones_.push_back(
            UnknownZone{IntValue<int32_t>(list.get(), r, 0), std::string(Value(list.get(), r, 1))});
        continue;
      }
      zones_.push_back(ZoneEntry{IntValue<int32_t>(list.get(), r, 0), *zone});
    }
    zone_rows_ = rows;
  }
  *any = rows > 0;
  return Status::Ok();
}

Status PgDueQueryStream::InSnapshot(const DueQuery& q, const char* begin_sql,
                                    const std::function<Status(const DueStatements&)>& body) {
  if (StatusOr<std::string> phases = PhaseArrayLiteral(q); !phases.ok()) return phases.status();
  if (Status st = Connect(); !st.ok()) return st;
  // All statements in one read-only transaction, each through its own cursor, on one snapshot
  // (REPEATABLE READ), the one in which the cron zones are read: the BEGIN and that read are one
  // round trip.
  Status status;
  try {
    bool any_zone = false;
    status = BeginAndRefreshZones(begin_sql, &any_zone);
    if (conn_ == nullptr) return status;
    if (status.ok()) {
      StatusOr<DueStatements> statements = BuildDueStatements(q, any_zone, zones_);
      if (!statements.ok()) {
        status = statements.status();
      } else {
        status = ReportUnknownZones(*statements);
        if (status.ok()) status = body(*statements);
      }
    }
  } catch (...) {
    Disconnect();  // mid-transaction, maybe with a cursor open
    throw;
  }
  if (conn_ == nullptr) return status;  // a connection fault already closed it
  // COMMIT closes the cursors; after an error it rolls the aborted transaction back.
  const Status ended = Command(status.ok() ? "COMMIT" : "ROLLBACK", "due query: end");
  return status.ok() ? ended : status;
}

Status PgDueQueryStream::ReportUnknownZones(const DueStatements& statements) {
  if (!on_unknown_zone_ || unknown_zones_.empty()) return Status::Ok();
  std::vector<int64_t> zone_ids;
  zone_ids.reserve(unknown_zones_.size());
  for (const UnknownZone& z : unknown_zones_) zone_ids.push_back(z.id);
  const std::string ids = ArrayLiteral(zone_ids);
  const char* values[2] = {statements.values[0].c_str(), ids.c_str()};  // $1: the stored shards
  PgResultPtr res(
      PQexecParams(conn_, pg_queries::kCountUnknownZoneJobsSql, 2, nullptr, values, nullptr, nullptr, 0));
  if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK) {
    return ResultError(res.get(), "due query: unknown zones");
  }
  for (int r = 0; r < PQntuples(res.get()); ++r) {
    const int32_t id = IntValue<int32_t>(res.get(), r, 0);
    const int64_t jobs = IntValue<int64_t>(res.get(), r, 1);
    for (const UnknownZone& z : unknown_zones_) {
      if (z.id == id && jobs > 0) on_unknown_zone_(z.name, jobs);
    }
  }
  return Status::Ok();
}

Status PgDueQueryStream::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  return InSnapshot(q, pg_queries::kBeginTickSnapshotSql, [&](const DueStatements& statements) {
    for (const pg_queries::DueCursor* cursor : statements.cursors) {
      if (Status st = RunCursor(*cursor, statements, q, fn); !st.ok()) return st;
    }
    return Status::Ok();
  });
}

StatusOr<std::string> PgDueQueryStream::ExplainDueQuery(const DueQuery& q) {
  std::string plan;
  Status st = InSnapshot(q, pg_queries::kBeginExplainSnapshotSql, [&](const DueStatements& statements) {
    std::vector<const char*> values;
    for (size_t i = 0; i < statements.values.size(); ++i) {
      plan += "-- $" + std::to_string(i + 1) + " = " + statements.values[i] + " (" + statements.names[i] + ")\n";
      values.push_back(statements.values[i].c_str());
    }
    for (const pg_queries::DueCursor* cursor : statements.cursors) {
      PgResultPtr res(PQexecParams(conn_, cursor->explain_sql, static_cast<int>(values.size()), nullptr,
                                   values.data(), nullptr, nullptr, 0));
      if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK) return ResultError(res.get(), "explain");
      plan += "-- ";
      plan += cursor->title;
      plan += '\n';
      for (int r = 0; r < PQntuples(res.get()); ++r) {
        plan += Value(res.get(), r, 0);
        plan += '\n';
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return plan;
}

Status PgDueQueryStream::RunCursor(const pg_queries::DueCursor& cursor, const DueStatements& statements,
                                   const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  {
    std::vector<const char*> values;
    for (const std::string& v : statements.values) values.push_back(v.c_str());
    PgResultPtr res(PQexecParams(conn_, cursor.declare_sql, static_cast<int>(values.size()), nullptr, values.data(),
                                 nullptr, nullptr, 0));
    if (res == nullptr || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      return ResultError(res.get(), "due query");
    }
  }
  const bool range = q.first_minute != q.last_minute;
  DueJob job;
  job.due_minute = q.last_minute;
  // One FETCH ahead: the server reads and sends the next rows while fn hands out these (it
  // queues each trigger for the producer), instead of the two taking turns. A full batch
  // sends the next FETCH before its rows are handed out; a short one is the last.
  if (PQsendQuery(conn_, cursor.fetch_sql) == 0) return ResultError(nullptr, "due query");
  for (;;) {
    PgResultPtr res(PQgetResult(conn_));
    // Each FETCH is one result, then none: read to the end before the next command.
    while (PGresult* rest = PQgetResult(conn_)) PQclear(rest);
    if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK) return ResultError(res.get(), "due query");
    const PGresult* raw = res.get();
    const int rows = PQntuples(raw);
    const bool more = rows >= pg_queries::kDueJobsFetchRows;
    if (more && PQsendQuery(conn_, cursor.fetch_sql) == 0) return ResultError(nullptr, "due query");
    for (int r = 0; r < rows; ++r) {
      job.id = Value(raw, r, 0);
      job.topic = Value(raw, r, 1);
      job.key = Value(raw, r, 2);
      job.details_json = Value(raw, r, 3);
      job.interval_minutes = IntValue<int32_t>(raw, r, 4);
      job.scheduled_for_ms = PQgetisnull(raw, r, 5) ? 0 : IntValue<int64_t>(raw, r, 5);
      if (range) job.due_minute = IntValue<int64_t>(raw, r, 6);
      fn(job);
    }
    if (!more) return Status::Ok();
  }
}

}  // namespace belfry
