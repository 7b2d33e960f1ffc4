#include "pg/pg_standby_reader.h"

#include <chrono>
#include <thread>
#include <utility>

#include "pg/connection_options.h"
#include "pg/steady_ms.h"

namespace belfry {
namespace {

// How long a read sleeps between two looks at the standby's replay position. Streaming
// replication on a LAN applies a commit in well under a millisecond to a few milliseconds.
constexpr std::chrono::microseconds kPollPause{500};

}  // namespace

PgStandbyReader::PgStandbyReader(StandbyOptions options, const TimeZoneDatabase& time_zones)
    : options_(std::move(options)), standby_(PgConninfo(options_.url), time_zones) {}

void PgStandbyReader::Report(const DueQueryRoute& route) const {
  if (options_.on_route) options_.on_route(route);
}

Status PgStandbyReader::OnPrimary(const DueQuery& q, const std::function<void(const DueJob&)>& fn,
                                  PgDueQueryStream& primary, DueQueryRoute route) {
  route.server = DueQueryRoute::Server::kPrimary;
  Report(route);
  return primary.ForEachDueJob(q, fn);
}

Status PgStandbyReader::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn,
                                      PgDueQueryStream& primary) {
  DueQueryRoute route;
  if (q.read_fence <= 0) {
    route.reason = DueQueryRoute::Reason::kNoFence;
    return OnPrimary(q, fn, primary, route);
  }
  const int64_t start = SteadyMs();
  if (start < unavailable_until_) {
    route.reason = DueQueryRoute::Reason::kUnavailable;
    return OnPrimary(q, fn, primary, route);
  }
  for (;;) {
    // Read before the query's snapshot is taken (PgDueQueryStream begins its transaction after
    // this), so the snapshot holds every commit up to the position read.
    StatusOr<int64_t> replayed = standby_.ReplayedPosition();
    const int64_t now = SteadyMs();
    route.waited_ms = now - start;
    if (!replayed.ok()) {
      standby_.Disconnect();
      unavailable_until_ = now + options_.retry_after_ms;
      route.reason = DueQueryRoute::Reason::kUnavailable;
      return OnPrimary(q, fn, primary, route);
    }
    route.lag_bytes = *replayed >= q.read_fence ? 0 : q.read_fence - *replayed;
    const StandbyVerdict verdict = JudgeStandby(q.read_fence, *replayed, route.waited_ms, lagging_, options_.rule);
    if (verdict == StandbyVerdict::kRead) break;
    if (verdict == StandbyVerdict::kFallBack) {
      lagging_ = true;
      route.reason = DueQueryRoute::Reason::kBehind;
      return OnPrimary(q, fn, primary, route);
    }
    std::this_thread::sleep_for(kPollPause);
  }
  lagging_ = false;
  int64_t rows = 0;
  const Status st = standby_.ForEachDueJob(q, [&](const DueJob& job) {
    ++rows;
    fn(job);
  });
  if (st.ok() || st.code() == Status::Code::kInvalid) {
    route.server = DueQueryRoute::Server::kStandby;
    if (!st.ok()) route.reason = DueQueryRoute::Reason::kFailed;
    Report(route);
    return st;
  }
  unavailable_until_ = SteadyMs() + options_.retry_after_ms;
  route.reason = DueQueryRoute::Reason::kFailed;
  if (rows == 0) return OnPrimary(q, fn, primary, route);
  route.server = DueQueryRoute::Server::kStandby;
  Report(route);
  return st;
}

}  // namespace belfry
