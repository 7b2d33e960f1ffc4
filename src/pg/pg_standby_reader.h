// PgStandbyReader: serves the tick query from a hot standby (a streaming replica) when the
// standby has replayed past the claim's read fence, and from the primary otherwise
// (docs/hot-standby.md). The judgment is JudgeStandby (core/standby_fence.h); this class reads
// the standby's replay position, waits, and routes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "belfry/job_store.h"
#include "belfry/status.h"
#include "core/standby_fence.h"
#include "pg/pg_due_query_stream.h"

namespace belfry {

struct StandbyOptions {
  std::string url;  // libpq URL of the standby; empty: no standby
  StandbyFenceRule rule;
  // After the standby failed (cannot connect, or a query failed), the primary serves every
  // query for this long before the standby is tried again.
  int64_t retry_after_ms = 5000;
  // Called once per due query, on the calling thread, with where it was read.
  std::function<void(const DueQueryRoute&)> on_route;
};

// Thread-compatible: one instance per thread, as PgDueQueryStream.
class PgStandbyReader final {
 public:
  // The standby's stream looks zones up in `time_zones`, which must outlive the reader.
  PgStandbyReader(StandbyOptions options, const TimeZoneDatabase& time_zones);
  PgStandbyReader(const PgStandbyReader&) = delete;
  PgStandbyReader& operator=(const PgStandbyReader&) = delete;

  // PgDueQueryStream::ForEachDueJob on the standby when it has replayed past q.read_fence (after
  // waiting up to rule.max_wait_ms), else on `primary`. A standby that fails before handing on
  // a row is replaced by the primary for that query; one that fails after returns the error, as
  // the primary would (the firing fails and is fired again: at least once).
  Status ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn, PgDueQueryStream& primary);

  // The standby's stream reports its unknown zones too (PgDueQueryStream::SetUnknownZoneHandler).
  void SetUnknownZoneHandler(PgDueQueryStream::UnknownZoneHandler handler) {
    standby_.SetUnknownZoneHandler(std::move(handler));
  }

 private:
  Status OnPrimary(const DueQuery& q, const std::function<void(const DueJob&)>& fn, PgDueQueryStream& primary,
                   DueQueryRoute route);
  void Report(const DueQueryRoute& route) const;

  const StandbyOptions options_;
  PgDueQueryStream standby_;
  bool lagging_ = false;            // the last fenced query fell back because the standby lagged
  int64_t unavailable_until_ = 0;   // steady-clock ms: the primary serves until then
};

}  // namespace belfry
