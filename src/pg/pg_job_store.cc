// PgJobStore: its connections, the layout record it reads, and the trigger path's two calls (the
// tick query, a refused trigger's record). Each role's methods are in a file of their own
// (pg_job_store.h says which); the statements it prepares are in pg_job_store_options.cc.
#include "pg/pg_job_store.h"

#include <pqxx/nontransaction>
#include <pqxx/result>
#include <utility>

#include "core/shard_layout.h"
#include "pg/pg_read_queries.h"
#include "pg/pg_schema_queries.h"

namespace belfry {

PgJobStore::PgJobStore(const PgJobStoreOptions& options)
    : time_zones_(*options.time_zones),
      session_(options.database, options.statements),
      due_stream_(options.database, time_zones_),
      standby_(options.standby.url.empty() ? nullptr
                                           : std::make_unique<PgStandbyReader>(options.standby, time_zones_)),
      workers_(!options.standby.url.empty() || !options.worker_tick.enabled
                   ? nullptr
                   : std::make_unique<PgWorkerTickRouter>(options.database, options.worker_tick, time_zones_)) {}

PgJobStore::PgJobStore(const std::string& database_url, StandbyOptions standby, const TimeZoneDatabase& time_zones)
    : PgJobStore(MakePgJobStoreOptions(database_url, std::move(standby), time_zones)) {}

PgJobStore::~PgJobStore() = default;

Status PgJobStore::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  if (standby_ != nullptr) return standby_->ForEachDueJob(q, fn, due_stream_);
  if (workers_ != nullptr) return workers_->ForEachDueJob(q, fn, due_stream_);
  return due_stream_.ForEachDueJob(q, fn);
}

Status PgJobStore::RecordDeliveryError(const DeliveryErrorRecord& e) {
  return session_.Run("record delivery error", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    txn.exec_prepared(pg_queries::kRecordDeliveryErrorName, e.job_id, e.topic, e.slot_ms, e.error, e.at_ms);
    return Status::Ok();
  });
}

Status PgJobStore::LoadLayout(pqxx::transaction_base& txn, bool lock) {
  if (lock) txn.exec_prepared(pg_queries::kLockLayoutSharedName, pg_queries::kLayoutLockKey);
  const pqxx::result r = txn.exec_prepared(lock ? pg_queries::kReadLayoutAndNowName : pg_queries::kReadLayoutName);
  if (r.empty() || r[0][0].is_null()) {
    return Status::FailedPrecondition("the database records no shard layout: run `belfry migrate`");
  }
  StatusOr<ShardLayout> layout = ParseShardLayout(r[0][0].as<std::string>());
  if (!layout.ok()) return layout.status();
  layout_ = *layout;
  txn_now_ = lock ? r[0][1].as<std::string>() : std::string();
  return Status::Ok();
}

StatusOr<std::string> PgJobStore::ExplainDueQuery(const DueQuery& q) { return due_stream_.ExplainDueQuery(q); }

void PgJobStore::SetUnknownZoneHandler(const PgDueQueryStream::UnknownZoneHandler& handler) {
  due_stream_.SetUnknownZoneHandler(handler);
  if (standby_ != nullptr) standby_->SetUnknownZoneHandler(handler);
  if (workers_ != nullptr) workers_->SetUnknownZoneHandler(handler);
}

}  // namespace belfry
