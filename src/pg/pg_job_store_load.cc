// PgJobStore's full reads for the load projection and a rebalance proposal
// (docs/load-projection.md).
#include "core/load_projection.h"
#include "pg/pg_job_store.h"

#include <charconv>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>

#include "core/slot_math.h"
#include "pg/pg_due_queries.h"
#include "pg/pg_load_queries.h"

namespace belfry {
namespace {

std::optional<EpochMs> OptionalMs(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<int64_t>();
}

Status TooManyGroups(const LoadGroupQuery& query) {
  return Status::Invalid("too_many_groups",
                         "the breakdown by " + query.by + " has more than " + std::to_string(query.max_groups) +
                             " groups of jobs that fire alike; `belfry load --by " + query.by +
                             "` reads without this limit (docs/load-projection.md)");
}

}  // namespace

StatusOr<LoadGroups> PgJobStore::ReadLoadGroups(const LoadGroupQuery& query) {
  StatusOr<LoadBreakdown> by = ParseLoadBreakdown(query.by);
  if (!by.ok()) return by.status();
  const size_t variant = static_cast<size_t>(by->kind);  // the statements' order: LoadBreakdown::Kind's
  const bool by_label = by->kind == LoadBreakdown::Kind::kLabel;
  const int64_t first_ms = MinuteStartMs(query.first_minute);
  const int64_t end_ms = MinuteStartMs(query.last_minute + 1);
  LoadGroups out;
  Status st = session_.Run("read load groups", [&](pqxx::connection& conn) {
    out = LoadGroups{};
    pqxx::work txn(conn, "load_groups");
    // One snapshot for the three reads: a zone a calendar job uses is in the zones read.
    txn.exec("SET TRANSACTION READ ONLY ISOLATION LEVEL REPEATABLE READ");
    // A full read of the jobs takes seconds at millions of jobs (2.7 s at 6.4M), beyond the admin
    // sessions' statement_timeout (2 s by default): this transaction gets its own bound.
    txn.exec(pg_queries::kLoadStatementTimeoutSql);
    txn.exec(pg_queries::kLoadCustomPlanSql);
    for (const pqxx::row& row : txn.exec(pg_queries::kListCronZonesSql)) {
      out.zones.emplace_back(row[0].as<int32_t>(), row[1].as<std::string>());
    }
    const int64_t limit = query.max_groups > 0 ? query.max_groups + 1 : INT64_MAX;
    const pqxx::result job_rows =
        by_label ? txn.exec_params(pg_queries::kLoadJobGroupsSql[variant], first_ms, end_ms, query.first_minute,
                                   query.last_minute, limit, by->label_key)
                 : txn.exec_params(pg_queries::kLoadJobGroupsSql[variant], first_ms, end_ms, query.first_minute,
                                   query.last_minute, limit);
    if (query.max_groups > 0 && static_cast<int64_t>(job_rows.size()) > query.max_groups) return TooManyGroups(query);
    for (const pqxx::row& row : job_rows) {
      LoadGroup& g = out.groups.emplace_back();
      g.shard = row[0].as<int32_t>();
      if (row[3].is_null()) {
        g.kind = LoadGroup::Kind::kInterval;
        g.interval_minutes = row[1].as<int32_t>();
        g.offset_minutes = row[2].as<int32_t>();
      } else {
        g.kind = LoadGroup::Kind::kOneShot;
        g.run_minute = row[3].as<int64_t>();
      }
      g.start_at = OptionalMs(row[4]);
      g.end_at = OptionalMs(row[5]);
      g.label = row[6].as<std::string>();
      g.jobs = row[7].as<int64_t>();
    }
    // max_groups bounds the request's groups, both statements together (issue 33 §5).
    const int64_t job_groups = static_cast<int64_t>(job_rows.size());
    const int64_t calendar_limit = query.max_groups > 0 ? query.max_groups - job_groups + 1 : INT64_MAX;
    const pqxx::result calendar_rows =
        by_label ? txn.exec_params(pg_queries::kLoadCalendarGroupsSql[variant], first_ms, end_ms, calendar_limit,
                                   by->label_key)
                 : txn.exec_params(pg_queries::kLoadCalendarGroupsSql[variant], first_ms, end_ms, calendar_limit);
    if (query.max_groups > 0 && job_groups + static_cast<int64_t>(calendar_rows.size()) > query.max_groups) {
      return TooManyGroups(query);
    }
    for (const pqxx::row& row : calendar_rows) {
      LoadGroup& g = out.groups.emplace_back();
      g.kind = LoadGroup::Kind::kCalendar;
      g.shard = row[0].as<int32_t>();
      LoadSlotRow masks;
      masks.hour_mask = row[2].as<int32_t>();
      masks.dom_mask = row[3].as<int32_t>();
      masks.month_mask = row[4].as<int32_t>();
      masks.dow_mask = row[5].as<int32_t>();
      masks.day_or = row[6].as<bool>();
      const std::string keys = row[1].as<std::string>();
      for (size_t pos = 0; pos < keys.size();) {
        size_t end = keys.find(',', pos);
        if (end == std::string::npos) end = keys.size();
        LoadSlotRow r = masks;
        std::from_chars(keys.data() + pos, keys.data() + end, r.key);
        g.slots.push_back(r);
        pos = end + 1;
      }
      g.start_at = OptionalMs(row[7]);
      g.end_at = OptionalMs(row[8]);
      g.label = row[9].as<std::string>();
      g.jobs = row[10].as<int64_t>();
    }
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::vector<OffsetLoad>> PgJobStore::ReadOffsetLoads() {
  std::vector<OffsetLoad> out;
  Status st = session_.Run("read offset loads", [&](pqxx::connection& conn) {
    out.clear();
    pqxx::work txn(conn, "offset_loads");
    txn.exec(pg_queries::kLoadStatementTimeoutSql);  // a full read, as ReadLoadGroups
    for (const pqxx::row& row : txn.exec(pg_queries::kOffsetLoadsSql)) {
      out.push_back(OffsetLoad{row[0].as<int32_t>(), row[1].as<int32_t>(), row[2].as<int64_t>(), row[3].as<int64_t>()});
    }
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::vector<std::string>> PgJobStore::MovableJobIds(int32_t interval_minutes, int32_t offset_minutes,
                                                             int32_t limit) {
  std::vector<std::string> out;
  Status st = session_.Run("movable job ids", [&](pqxx::connection& conn) {
    out.clear();
    pqxx::nontransaction txn(conn);
    for (const pqxx::row& row : txn.exec_params(pg_queries::kMovableJobIdsSql, interval_minutes, offset_minutes, limit)) {
      out.push_back(row[0].as<std::string>());
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace belfry
