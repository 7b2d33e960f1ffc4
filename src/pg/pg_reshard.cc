#include "pg/pg_reshard.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/except>
#include <pqxx/transaction>
#include <thread>
#include <utility>
#include <vector>

#include "core/derived_row_id.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "pg/array_literal.h"
#include "pg/pg_reshard_queries.h"
#include "pg/pg_schema_queries.h"

namespace belfry {
namespace {

namespace q = pg_queries;

StatusOr<ShardLayout> LayoutFrom(const pqxx::result& r) {
  if (r.empty()) return Status::FailedPrecondition("the database has no shard layout record: run `belfry migrate`");
  return ParseShardLayout(r[0][0].as<std::string>());
}

// The layout record of a reshard step, with the layout lock held exclusive until `txn` ends: no
// command transaction is between its read of the layout and its commit meanwhile.
StatusOr<ShardLayout> LockLayout(pqxx::transaction_base& txn) {
  txn.exec_params(q::kLockLayoutExclusiveSql, q::kLayoutLockKey);
  return LayoutFrom(txn.exec(q::kLockLayoutSql));
}

// The partition name of a shard, as migration 0005 names them (three digits, more when needed).
std::string PartitionName(int32_t shard) { return fmt::format("jobs_shard_{:03d}", shard); }

// The id whose hash places a row: a derived row (a retry, a manual trigger or backfill row) is
// stored with its job.
std::string_view PlacementId(std::string_view id) {
  if (const std::optional<DerivedRowRef> derived = ParseDerivedRowId(id)) return derived->job_id;
  return id;
}

// Ok once no firing will use the cut-over record's old layout again (kShardsBeforeCutoverSql);
// else FailedPrecondition naming the shards that still hold a minute before the cut-over.
Status CutoverSettled(pqxx::transaction_base& txn, const ShardLayout& cutover) {
  const pqxx::result r = txn.exec_params(q::kShardsBeforeCutoverSql, cutover.cutover_minute, cutover.from);
  if (r.empty()) return Status::Ok();
  std::string shards;
  for (const pqxx::row& row : r) shards += (shards.empty() ? "" : ", ") + row[0].as<std::string>();
  return Status::FailedPrecondition(fmt::format(
      "the reshard to {} cut over at minute {}, and shard(s) {}{} still hold a minute before it (not fired "
      "through it, or owed in catch-up debt); run again once the cluster has fired past the cut-over",
      cutover.to, cutover.cutover_minute, shards, r.size() == 10 ? " (and maybe more)" : ""));
}

}  // namespace

PgReshard::PgReshard(std::string database_url) : session_(std::move(database_url), {}) {}

StatusOr<ShardLayout> PgReshard::Read() {
  StatusOr<ShardLayout> out = Status::Ok();
  Status st = session_.Run("read shard layout", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    out = LayoutFrom(txn.exec(q::kReadLayoutSql));
    return out.ok() ? Status::Ok() : out.status();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<ShardLayout> PgReshard::Begin(int32_t to) {
  StatusOr<ShardLayout> current = Read();
  if (!current.ok()) return current;
  if (current->phase != ShardLayout::Phase::kStable) {
    if (current->to == to) return current;  // under way already: carry on
    if (current->phase != ShardLayout::Phase::kCutover) {
      return Status::FailedPrecondition(
          fmt::format("a reshard to {} is under way; finish it before starting another", current->to));
    }
  }
  const int32_t from = StoredShardCount(*current);  // a cut-over's `to`
  if (Status st = ValidateReshard(from, to); !st.ok()) return st;
  if (current->phase == ShardLayout::Phase::kCutover) {
    Status settled = session_.Run("check the last cut-over", [&](pqxx::connection& conn) {
      pqxx::nontransaction txn(conn);
      return CutoverSettled(txn, *current);
    });
    if (!settled.ok()) return settled;
  }
  // The partitions first, one transaction each. Not CREATE TABLE ... PARTITION OF jobs: that
  // takes ACCESS EXCLUSIVE on jobs, waits for every running tick query and makes every later
  // one wait for it (docs/resharding.md). A table made on its own, with a CHECK that spares the
  // attach a scan, is attached under SHARE UPDATE EXCLUSIVE, which reads and writes do not
  // conflict with; a short lock_timeout, retried, keeps it from queueing before anything.
  for (int32_t shard = from; shard < to; ++shard) {
    bool attached = false;
    for (int attempt = 0; !attached; ++attempt) {
      bool lock_timed_out = false;
      Status st = session_.Run("attach shard partition", [&](pqxx::connection& conn) {
        pqxx::work txn(conn, "reshard_partition");
        const std::string name = PartitionName(shard);
        if (txn.exec_params1(q::kHasShardPartitionSql, name)[0].as<bool>()) {
          attached = true;
          return Status::Ok();
        }
        if (txn.exec1(q::kCountDefaultPartitionSql)[0].as<int64_t>() != 0) {
          return Status::FailedPrecondition(
              "jobs_shard_default holds rows: the stored layout is not what the record says; not resharding");
        }
        const std::string quoted = txn.quote_name(name);
        txn.exec0(fmt::format(
            "CREATE TABLE IF NOT EXISTS {} (LIKE jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED "
            "INCLUDING STORAGE, CONSTRAINT {} CHECK (shard = {})) WITH (fillfactor = 90)",
            quoted, txn.quote_name(name + "_shard"), shard));
        txn.exec0("SET LOCAL lock_timeout = '200ms'");
        try {
          txn.exec0(fmt::format("ALTER TABLE jobs ATTACH PARTITION {} FOR VALUES IN ({})", quoted, shard));
        } catch (const pqxx::sql_error& e) {
          if (e.sqlstate() != "55P03") throw;  // lock_not_available: try again
          lock_timed_out = true;
          return Status::Ok();
        }
        txn.commit();
        attached = true;
        return Status::Ok();
      });
      if (!st.ok()) return st;
      if (lock_timed_out) {
        if (attempt >= 300) return Status::Retryable("could not attach a partition within 300 tries; run again");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  StatusOr<ShardLayout> out = Status::Ok();
  Status st = session_.Run("begin reshard", [&](pqxx::connection& conn) {
    pqxx::work txn(conn, "reshard_begin");
    StatusOr<ShardLayout> locked = LockLayout(txn);
    if (!locked.ok()) return locked.status();
    if (EncodeShardLayout(*locked) != EncodeShardLayout(*current)) {
      return Status::FailedPrecondition("the shard layout changed while the partitions were created; run again");
    }
    if (locked->phase == ShardLayout::Phase::kCutover) {
      if (Status st = CutoverSettled(txn, *locked); !st.ok()) return st;
    }
    ShardLayout next{from, to, ShardLayout::Phase::kMoving, -1, 0};
    txn.exec_params0(q::kWriteLayoutSql, EncodeShardLayout(next));
    txn.commit();
    out = next;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<int64_t> PgReshard::MoveNextShard() {
  int64_t moved = 0;
  Status st = session_.Run("move shard", [&](pqxx::connection& conn) {
    pqxx::work txn(conn, "reshard_move");
    StatusOr<ShardLayout> l = LockLayout(txn);
    if (!l.ok()) return l.status();
    if (l->phase != ShardLayout::Phase::kMoving || l->moved_through + 1 >= l->from) {
      return Status::FailedPrecondition("no shard is left to move");
    }
    const int32_t old_shard = l->moved_through + 1;
    std::map<int32_t, std::vector<std::string>> by_target;
    for (const pqxx::row& row : txn.exec_params(q::kIdsInShardSql, old_shard)) {
      const std::string id = row[0].as<std::string>();
      const int32_t target = ShardForId(PlacementId(id), l->to);
      if (target != old_shard) by_target[target].push_back(id);
    }
    for (const auto& [target, ids] : by_target) {
      const std::string array = ArrayLiteral(ids);
      moved += static_cast<int64_t>(txn.exec_params0(q::kMoveJobsSql, target, old_shard, array).affected_rows());
      txn.exec_params0(q::kMoveCronSlotsSql, target, old_shard, array);
    }
    ShardLayout next = *l;
    next.moved_through = old_shard;
    txn.exec_params0(q::kWriteLayoutSql, EncodeShardLayout(next));
    txn.commit();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return moved;
}

StatusOr<ShardLayout> PgReshard::CutOver(int64_t now_ms, int64_t lead_ms) {
  StatusOr<ShardLayout> out = Status::Ok();
  Status st = session_.Run("cut over", [&](pqxx::connection& conn) {
    pqxx::work txn(conn, "reshard_cutover");
    StatusOr<ShardLayout> l = LockLayout(txn);
    if (!l.ok()) return l.status();
    if (l->phase == ShardLayout::Phase::kCutover) {
      out = *l;
      return Status::Ok();
    }
    if (l->phase != ShardLayout::Phase::kMoving || l->moved_through != l->from - 1) {
      return Status::FailedPrecondition("the move is not finished; no cut-over yet");
    }
    const int64_t cutover = FirstMinuteAtOrAfter(now_ms + lead_ms);
    ShardLayout next = *l;
    next.phase = ShardLayout::Phase::kCutover;
    next.cutover_minute = cutover;
    txn.exec_params0(q::kInsertNewShardStatesSql, l->from, l->to - 1, cutover - 1);
    txn.exec_params0(q::kWriteLayoutSql, EncodeShardLayout(next));
    txn.exec_params0(q::kWriteShardCountSql, std::to_string(l->to));
    txn.commit();
    out = next;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace belfry
