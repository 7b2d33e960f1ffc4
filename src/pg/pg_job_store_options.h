// PgJobStoreOptions: what every PgJobStore built from it shares, derived once: the connection
// string, the prepared statements of every role (one immutable list), the tick query's hot
// standby and the tz database. `belfry serve` builds them once (ServeRules: the primary's, and the
// admin sessions' with the same statement list) and hands them to every store it makes;
// PgJobStore(database_url, ...) builds its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/time_zone_database.h"
#include "pg/connection_options.h"
#include "pg/pg_session.h"
#include "pg/pg_standby_reader.h"
#include "pg/pg_worker_tick_router.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {

// Copies share the statement list. Built by MakePgJobStoreOptions; a copy may then take another
// connection string or standby.
struct PgJobStoreOptions {
  PgConninfo database;
  // Every role's statements (pg_*_queries.h), prepared on each of the store's connections. Not null.
  std::shared_ptr<const std::vector<PreparedStatement>> statements;
  // The tick query's hot standby (docs/hot-standby.md); url empty: none.
  StandbyOptions standby;
  // Calendar jobs' zones (the tick's terms, fire limits, backfills, re-plans). Not null; outlives
  // every store built from these options.
  const TimeZoneDatabase* time_zones;
  // On Citus, the tick query straight to the worker that holds the shard (PgWorkerTickRouter),
  // when there is no standby. Off here: only the scheduler's stores turn it on.
  WorkerTickOptions worker_tick{.enabled = false};
};

// The options of stores connecting to `database_url`, with the statement list built here.
PgJobStoreOptions MakePgJobStoreOptions(const std::string& database_url, StandbyOptions standby = {},
                                        const TimeZoneDatabase& time_zones = SystemTimeZones());

}  // namespace belfry
