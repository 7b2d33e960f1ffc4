#include "pg/pg_worker_tick_router.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <utility>

#include "pg/pg_schema_queries.h"
#include "pg/steady_ms.h"

namespace belfry {

PgWorkerTickRouter::PgWorkerTickRouter(PgConninfo coordinator, WorkerTickOptions options,
                                       const TimeZoneDatabase& time_zones)
    : coordinator_(std::move(coordinator)), options_(options), time_zones_(time_zones) {
  if (!options_.enabled) citus_ = false;
}

PgWorkerTickRouter::~PgWorkerTickRouter() = default;

void PgWorkerTickRouter::SetUnknownZoneHandler(PgDueQueryStream::UnknownZoneHandler handler) {
  on_unknown_zone_ = std::move(handler);
  for (auto& [worker, stream] : streams_) stream->SetUnknownZoneHandler(on_unknown_zone_);
}

std::optional<std::string> PgWorkerTickRouter::WorkerOf(int32_t shard) {
  if (citus_ == false) return std::nullopt;
  const int64_t now = SteadyMs();
  if (now - map_read_at_ >= options_.map_refresh_ms) {
    worker_of_shard_.clear();
    map_read_at_ = now;
  }
  if (auto it = worker_of_shard_.find(shard); it != worker_of_shard_.end()) return it->second;
  if (now < lookup_failed_until_) return std::nullopt;
  try {
    if (metadata_ == nullptr) metadata_ = std::make_unique<pqxx::connection>(coordinator_.str());
    pqxx::nontransaction txn(*metadata_);
    if (!citus_.has_value()) {
      citus_ = txn.exec1(pg_queries::kCitusInstalledSql)[0].as<bool>();
      if (!*citus_) {
        metadata_.reset();
        return std::nullopt;
      }
      spdlog::debug("Citus: tick queries go straight to the worker that holds each shard (citus.tick_on_workers)");
    }
    const pqxx::result r = txn.exec_params(pg_queries::kCitusWorkerOfShardSql, shard);
    if (r.empty()) return std::nullopt;  // not distributed (yet): the coordinator knows
    std::string worker = r[0][0].as<std::string>() + ":" + r[0][1].as<std::string>();
    worker_of_shard_[shard] = worker;
    return worker;
  } catch (const std::exception& e) {
    // The coordinator serves, and reports the fault if it has one; no lookup for a while.
    metadata_.reset();
    lookup_failed_until_ = now + options_.retry_after_ms;
    return std::nullopt;
  }
}

PgDueQueryStream& PgWorkerTickRouter::StreamOf(const std::string& worker) {
  std::unique_ptr<PgDueQueryStream>& stream = streams_[worker];
  if (stream == nullptr) {
    const size_t colon = worker.rfind(':');
    stream = std::make_unique<PgDueQueryStream>(
        PgConninfo(WithConninfoOverrides(coordinator_.str(),
                                         {{"host", worker.substr(0, colon)}, {"port", worker.substr(colon + 1)}})),
        time_zones_);
    if (on_unknown_zone_) stream->SetUnknownZoneHandler(on_unknown_zone_);
  }
  return *stream;
}

Status PgWorkerTickRouter::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn,
                                         PgDueQueryStream& coordinator) {
  const int32_t shard = q.stored_shards.empty() ? q.shard : q.stored_shards.front();
  const std::optional<std::string> worker = WorkerOf(shard);
  const int64_t now = SteadyMs();
  if (!worker || now < unavailable_until_[*worker]) {
    last_route_.clear();
    return coordinator.ForEachDueJob(q, fn);
  }
  int64_t rows = 0;
  const Status st = StreamOf(*worker).ForEachDueJob(q, [&](const DueJob& job) {
    ++rows;
    fn(job);
  });
  last_route_ = *worker;
  if (st.ok() || st.code() == Status::Code::kInvalid || rows > 0) return st;
  // The worker failed before any row: the coordinator serves, and the next queries too for a while.
  spdlog::warn("tick query on Citus worker {} failed, through the coordinator for {} ms: {}", *worker,
               options_.retry_after_ms, st.ToString());
  unavailable_until_[*worker] = SteadyMs() + options_.retry_after_ms;
  worker_of_shard_.erase(shard);
  last_route_.clear();
  return coordinator.ForEachDueJob(q, fn);
}

}  // namespace belfry
