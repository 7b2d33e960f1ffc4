#include "pg/pg_due_query_stream.h"

#include <libpq-fe.h>

#include <charconv>
#include <memory>
#include <utility>

#include "pg/connection_options.h"
#include "pg/pg_queries.h"
#include "pg/pg_status.h"

namespace belfry {
namespace {

struct PgResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResultPtr = std::unique_ptr<PGresult, PgResultDeleter>;

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, end);
}

std::string IntText(int64_t v) {
  std::string s;
  AppendInt(&s, v);
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
    if (t.interval_minutes <= 0 || t.interval_minutes > 1440) {
      return Status::Invalid("due_query",
                             "interval " + std::to_string(t.interval_minutes) + " is outside 1..1440");
    }
    for (int32_t offset : t.offsets) {
      if (offset < 0 || offset >= t.interval_minutes) {
        return Status::Invalid("due_query", "offset " + std::to_string(offset) + " is outside [0, " +
                                                std::to_string(t.interval_minutes) + ")");
      }
      if (out.size() > 1) out.push_back(',');
      AppendInt(&out, static_cast<int64_t>(t.interval_minutes) * 1440 + offset);
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
    AppendInt(&*out, -m);
  }
  out->push_back('}');
  return out;
}

PgDueQueryStream::PgDueQueryStream(std::string database_url) : database_url_(WithConnectTimeout(database_url)) {}

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
  conn_ = PQconnectdb(database_url_.c_str());
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

// The four (or, for a range, five) array parameters of the cron statements.
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
    AppendInt(&a.keys, terms[i].key);
    AppendInt(&a.hour, terms[i].hour_bit);
    AppendInt(&a.dom, terms[i].dom_bit);
    AppendInt(&a.month, terms[i].month_bit);
    AppendInt(&a.dow, terms[i].dow_bit);
    AppendInt(&a.minutes, terms[i].minute);
  }
  for (std::string* s : {&a.keys, &a.hour, &a.dom, &a.month, &a.dow, &a.minutes}) s->push_back('}');
  return a;
}

}  // namespace

Status PgDueQueryStream::RefreshZones(bool* any) {
  PgResultPtr res(PQexec(conn_, pg_queries::kCountCronZonesSql));
  if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK) return ResultError(res.get(), "due query: zones");
  const int64_t rows = IntValue<int64_t>(res.get(), 0, 0);
  if (rows != zone_rows_) {
    PgResultPtr list(PQexec(conn_, pg_queries::kListCronZonesSql));
    if (list == nullptr || PQresultStatus(list.get()) != PGRES_TUPLES_OK) {
      return ResultError(list.get(), "due query: zones");
    }
    zones_.clear();
    unknown_zones_ = 0;
    for (int r = 0; r < PQntuples(list.get()); ++r) {
      StatusOr<const date::time_zone*> zone = LocateTimeZone(Value(list.get(), r, 1));
      if (!zone.ok()) {
        ++unknown_zones_;
        continue;
      }
      zones_.push_back(ZoneEntry{IntValue<int32_t>(list.get(), r, 0), *zone});
    }
    zone_rows_ = rows;
  }
  *any = rows > 0;
  return Status::Ok();
}

Status PgDueQueryStream::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  StatusOr<std::string> phases = PhaseArrayLiteral(q);
  if (!phases.ok()) return phases.status();
  if (Status st = Connect(); !st.ok()) return st;

  const bool range = q.first_minute != q.last_minute;
  const int64_t slot_offset_ms = static_cast<int64_t>(q.shard) * q.tick_ms;
  std::string shard = "{";
  if (q.stored_shards.empty()) {
    AppendInt(&shard, q.shard);
  } else {
    for (size_t i = 0; i < q.stored_shards.size(); ++i) {
      if (i > 0) shard.push_back(',');
      AppendInt(&shard, q.stored_shards[i]);
    }
  }
  shard.push_back('}');
  std::string params[3];
  const char* values[11] = {shard.c_str(), phases->c_str()};
  int n_params = 3;
  if (!range) {
    params[0] = IntText(q.last_minute * 60'000 + slot_offset_ms);
    values[2] = params[0].c_str();
  } else {
    params[0] = IntText(q.first_minute);
    params[1] = IntText(q.last_minute);
    params[2] = IntText(slot_offset_ms);
    for (int i = 0; i < 3; ++i) values[2 + i] = params[i].c_str();
    n_params = 5;
  }
  // A shard-minute is three statements (priority > 0, = 0, < 0: see pg_queries.h); a coalesced
  // range is one, sorted. All in one read-only transaction, each through its own cursor, on one
  // snapshot (REPEATABLE READ), the one in which the cron zones are read.
  if (Status st = Command("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ", "due query: begin"); !st.ok()) {
    return st;
  }
  Status status;
  try {
    bool any_zone = false;
    status = RefreshZones(&any_zone);
    if (conn_ == nullptr) return status;
    TermArrays terms;
    if (status.ok() && any_zone) {
      terms = CalendarTermArrays(zones_, q);
      for (const std::string* s : {&terms.keys, &terms.hour, &terms.dom, &terms.month, &terms.dow}) {
        values[n_params++] = s->c_str();
      }
      if (range) values[n_params++] = terms.minutes.c_str();
    }
    if (!status.ok()) {
      // RefreshZones failed inside the transaction: fall through to ROLLBACK.
    } else if (range) {
      status = RunCursor(any_zone ? pg_queries::kDueJobsRangeWithCronCursor : pg_queries::kDueJobsRangeCursor,
                         n_params, values, q, fn);
    } else {
      const pg_queries::DueCursor plain[] = {pg_queries::kDueJobsHighCursor, pg_queries::kDueJobsCursor,
                                             pg_queries::kDueJobsLowCursor};
      const pg_queries::DueCursor with_cron[] = {pg_queries::kDueJobsHighWithCronCursor,
                                                 pg_queries::kDueJobsWithCronCursor,
                                                 pg_queries::kDueJobsLowWithCronCursor};
      const pg_queries::DueCursor* cursors = any_zone ? with_cron : plain;
      for (int i = 0; i < 3; ++i) {
        status = RunCursor(cursors[i], n_params, values, q, fn);
        if (!status.ok()) break;
      }
    }
  } catch (...) {
    Disconnect();  // mid-transaction, with a cursor open
    throw;
  }
  if (conn_ == nullptr) return status;  // a connection fault already closed it
  // COMMIT closes the cursors; after an error it rolls the aborted transaction back.
  const Status ended = Command(status.ok() ? "COMMIT" : "ROLLBACK", "due query: end");
  return status.ok() ? ended : status;
}

Status PgDueQueryStream::RunCursor(const pg_queries::DueCursor& cursor, int n_params, const char* const* values,
                                   const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  {
    PgResultPtr res(PQexecParams(conn_, cursor.declare_sql, n_params, nullptr, values, nullptr, nullptr, 0));
    if (res == nullptr || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      return ResultError(res.get(), "due query");
    }
  }
  const bool range = q.first_minute != q.last_minute;
  DueJob job;
  job.due_minute = q.last_minute;
  for (;;) {
    PgResultPtr res(PQexec(conn_, cursor.fetch_sql));
    if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK) return ResultError(res.get(), "due query");
    const PGresult* raw = res.get();
    const int rows = PQntuples(raw);
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
    if (rows < pg_queries::kDueJobsFetchRows) return Status::Ok();
  }
}

}  // namespace belfry
