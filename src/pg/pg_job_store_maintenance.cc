// PgJobStore's background upkeep, off the trigger and command paths: the one-shot retention
// sweep and the re-plan of calendar jobs after a tzdata change.
#include "pg/pg_job_store.h"

#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>

#include "core/calendar_schedule.h"
#include "pg/array_literal.h"
#include "pg/pg_maintenance_queries.h"

namespace belfry {
StatusOr<int64_t> PgJobStore::SweepOneShots(int64_t before_minute, int32_t max_rows) {
  int64_t deleted = 0;
  Status st = session_.Run("sweep one-shots", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    deleted = static_cast<int64_t>(txn.exec_prepared(pg_queries::kSweepOneShotsName, before_minute, max_rows).size());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return deleted;
}

StatusOr<PgJobStore::ReplanReport> PgJobStore::ReplanCalendarJobs(const std::string& tzdata_version, EpochMs now,
                                                                  const std::vector<int32_t>& intervals) {
  ReplanReport report;
  Status st = session_.Run("re-plan calendar jobs", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    report = ReplanReport();
    pqxx::work txn(conn, "replan_calendar_jobs");
    const pqxx::result recorded = txn.exec_prepared(q::kTzdataVersionName);
    if (!recorded.empty() && recorded[0][0].as<std::string>() == tzdata_version) return Status::Ok();
    report.version_changed = true;
    const pqxx::result rows = txn.exec_prepared(q::kIntervalCalendarJobsName);
    for (const pqxx::row& row : rows) {
      ++report.checked;
      JobSpec spec;
      spec.id = row[0].as<std::string>();
      spec.shard = row[1].as<int32_t>();
      const std::string cron = row[2].as<std::string>();
      const std::string zone = row[3].as<std::string>();
      // Planned with neither start nor end: those only decide whether it can still fire, and a
      // job already past its end keeps its plan.
      if (Status planned = PlanCalendarJob(time_zones_, cron, zone, now, intervals, &spec); !planned.ok()) {
        if (planned.reason() == "invalid_time_zone") ++report.unknown_zone;
        continue;
      }
      if (spec.interval_minutes == row[4].as<int32_t>() && spec.offset_minutes == row[5].as<int32_t>()) continue;
      // A command that changed the job after the read above wins: its update matched no row, and
      // the old expression's slots must not be added beside the new one's.
      const pqxx::result updated = txn.exec_prepared(q::kReplanJobName, spec.shard, spec.id, spec.interval_minutes,
                                                     spec.offset_minutes, cron, zone);
      if (updated.affected_rows() == 0) continue;
      ++report.changed;
      if (spec.calendar_slots()) {
        const CalendarSlots& slots = spec.calendar->slots;
        txn.exec_prepared(q::kRegisterZoneName, zone);
        txn.exec_prepared(q::kInsertJobSlotsName, spec.shard, spec.id, ArrayLiteral(slots.codes), slots.hour_mask,
                          slots.dom_mask, slots.month_mask, slots.dow_mask, slots.day_or, zone);
      }
    }
    txn.exec_prepared(q::kSetTzdataVersionName, tzdata_version);
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return report;
}

}  // namespace belfry
