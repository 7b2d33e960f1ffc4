#include "pg/pg_job_store.h"

#include <algorithm>
#include <charconv>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>
#include <utility>

#include "core/json_writer.h"
#include "core/shard_hash.h"
#include "pg/pg_queries.h"

namespace belfry {
namespace {

// Upper bound on one JSON parameter. A batch of large jobs (details may be 64 KiB each) is split
// into several executions of the same statements, inside the same transaction, so that no single
// parameter or parse holds hundreds of megabytes.
constexpr size_t kMaxJsonChunkBytes = 8 << 20;

std::vector<PreparedStatement> JobStoreStatements() {
  namespace q = pg_queries;
  return {
      {q::kInsertJobsName, q::kInsertJobsSql},
      {q::kUpdateJobsName, q::kUpdateJobsSql},
      {q::kDeleteJobsName, q::kDeleteJobsSql},
      {q::kSetPausedName, q::kSetPausedSql},
      {q::kGetJobName, q::kGetJobSql},
      {q::kGetJobInShardName, q::kGetJobInShardSql},
      {q::kListJobsName, q::kListJobsSql},
      {q::kListJobsByOwnerName, q::kListJobsByOwnerSql},
      {q::kListJobsByTopicName, q::kListJobsByTopicSql},
      {q::kListJobsByOwnerTopicName, q::kListJobsByOwnerTopicSql},
      {q::kCountJobsName, q::kCountJobsSql},
      {q::kExplainDueJobsName, q::kExplainDueJobsSql},
      {q::kExplainDueJobsHighName, q::kExplainDueJobsHighSql},
      {q::kExplainDueJobsLowName, q::kExplainDueJobsLowSql},
      {q::kSweepOneShotsName, q::kSweepOneShotsSql},
      {q::kGetShardCountName, q::kGetShardCountSql},
  };
}

// Builds the JSON array parameters of one statement, split into chunks of bounded size.
class JsonArrayChunks final {
 public:
  // Starts an object; add its fields with String(), Int(), ..., then call EndObject().
  void BeginObject() {
    if (current_.size() >= kMaxJsonChunkBytes) Flush();
    current_.push_back(current_.empty() ? '[' : ',');
    current_.push_back('{');
    first_field_ = true;
  }
  void EndObject() { current_.push_back('}'); }

  void String(const char* name, std::string_view v) {
    Name(name);
    AppendJsonString(&current_, v);
  }
  void Int(const char* name, int64_t v) {
    Name(name);
    current_ += std::to_string(v);
  }
  void OptionalInt(const char* name, const std::optional<int64_t>& v) {
    Name(name);
    current_ += v ? std::to_string(*v) : "null";
  }
  void Bool(const char* name, bool v) {
    Name(name);
    current_ += v ? "true" : "false";
  }
  void OptionalBool(const char* name, const std::optional<bool>& v) {
    Name(name);
    current_ += v ? (*v ? "true" : "false") : "null";
  }

  std::vector<std::string> Finish() {
    Flush();
    return std::move(chunks_);
  }

 private:
  void Name(const char* name) {
    if (!first_field_) current_.push_back(',');
    first_field_ = false;
    current_.push_back('"');
    current_ += name;
    current_ += "\":";
  }
  void Flush() {
    if (current_.empty()) return;
    current_.push_back(']');
    chunks_.push_back(std::move(current_));
    current_.clear();
  }

  std::string current_;
  bool first_field_ = true;
  std::vector<std::string> chunks_;
};

struct ActionParams {
  std::vector<std::string> upserts;
  std::vector<std::string> deletes;
  std::vector<std::string> set_paused;
};

// Upserts carry their spec's shard; deletes and pause/resume carry ShardForId(id, shard_count).
ActionParams BuildActionParams(const std::vector<JobAction>& actions, int32_t shard_count) {
  // Rows are written in id order, so two transactions that touch the same jobs lock them in the
  // same order (fewer deadlocks when a consumer-group rebalance briefly overlaps two consumers).
  std::vector<const JobAction*> sorted;
  sorted.reserve(actions.size());
  for (const JobAction& a : actions) sorted.push_back(&a);
  std::sort(sorted.begin(), sorted.end(),
            [](const JobAction* x, const JobAction* y) { return x->id < y->id; });

  JsonArrayChunks upserts, deletes, set_paused;
  for (const JobAction* a : sorted) {
    switch (a->kind) {
      case JobAction::Kind::kUpsert: {
        const JobSpec& s = a->spec;
        upserts.BeginObject();
        upserts.String("id", a->id);
        upserts.Int("shard", s.shard);
        upserts.Int("interval_minutes", s.interval_minutes);
        upserts.Int("offset_minutes", s.offset_minutes);
        upserts.Bool("keep_offset", !a->replace_fresh && !s.offset_explicit);
        upserts.String("owner", s.owner);
        upserts.String("topic", s.topic);
        upserts.String("key", s.key);
        upserts.String("details", s.details_json.empty() ? std::string_view("{}") : s.details_json);
        upserts.OptionalInt("start_ms", s.start_at);
        upserts.OptionalInt("end_ms", s.end_at);
        upserts.Int("priority", s.priority);
        upserts.OptionalBool("paused", a->paused);
        upserts.Bool("replace_fresh", a->replace_fresh);
        upserts.Int("src_partition", a->source.partition);
        upserts.Int("src_offset", a->source.offset);
        upserts.OptionalInt("run_at_ms", s.run_at);
        upserts.OptionalInt("run_minute", s.one_shot() ? std::optional<int64_t>(s.run_minute) : std::nullopt);
        upserts.Int("late_limit", s.late_limit_minute);
        upserts.OptionalInt("scheduled_for_ms",
                            s.one_shot() ? std::optional<int64_t>(s.scheduled_for_ms) : std::nullopt);
        upserts.EndObject();
        break;
      }
      case JobAction::Kind::kDelete:
        deletes.BeginObject();
        deletes.String("id", a->id);
        deletes.Int("shard", ShardForId(a->id, shard_count));
        deletes.Int("src_partition", a->source.partition);
        deletes.Int("src_offset", a->source.offset);
        deletes.EndObject();
        break;
      case JobAction::Kind::kSetPaused:
        set_paused.BeginObject();
        set_paused.String("id", a->id);
        set_paused.Int("shard", ShardForId(a->id, shard_count));
        set_paused.Bool("paused", a->paused.value_or(false));
        set_paused.Int("src_partition", a->source.partition);
        set_paused.Int("src_offset", a->source.offset);
        set_paused.EndObject();
        break;
    }
  }
  return ActionParams{upserts.Finish(), deletes.Finish(), set_paused.Finish()};
}

std::optional<int64_t> OptionalInt64(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<int64_t>();
}

// Decodes a row selected with the job column list of pg_queries.h.
StoredJob StoredJobFromRow(const pqxx::row& row) {
  StoredJob job;
  JobSpec& s = job.spec;
  s.id = row[0].as<std::string>();
  s.owner = row[1].as<std::string>();
  s.interval_minutes = row[2].as<int32_t>();
  s.offset_minutes = row[3].as<int32_t>();
  s.shard = row[4].as<int32_t>();
  s.topic = row[5].as<std::string>();
  s.key = row[6].as<std::string>();
  s.details_json = row[7].as<std::string>();
  s.start_at = OptionalInt64(row[8]);
  s.end_at = OptionalInt64(row[9]);
  s.priority = row[10].as<int32_t>();
  job.paused = row[11].as<bool>();
  job.created_at = row[12].as<int64_t>();
  job.updated_at = row[13].as<int64_t>();
  job.source.partition = row[14].as<int32_t>();
  job.source.offset = row[15].as<int64_t>();
  s.run_at = OptionalInt64(row[16]);
  s.run_minute = OptionalInt64(row[17]).value_or(0);
  s.scheduled_for_ms = OptionalInt64(row[18]).value_or(0);
  return job;
}

}  // namespace

PgJobStore::PgJobStore(std::string database_url, std::string due_query_url)
    : session_(database_url, JobStoreStatements()),
      due_stream_(due_query_url.empty() ? std::move(database_url) : std::move(due_query_url)) {}

PgJobStore::~PgJobStore() = default;

Status PgJobStore::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  return due_stream_.ForEachDueJob(q, fn);
}

Status PgJobStore::ApplyActions(const std::vector<JobAction>& actions) {
  if (actions.empty()) return Status::Ok();
  return session_.Run("apply actions", [&](pqxx::connection& conn) {
    pqxx::work txn(conn, "apply_actions");
    if (Status st = LoadShardCount(txn); !st.ok()) return st;
    const ActionParams params = BuildActionParams(actions, shard_count_);
    for (const std::string& chunk : params.upserts) {
      txn.exec_prepared(pg_queries::kInsertJobsName, chunk);
      txn.exec_prepared(pg_queries::kUpdateJobsName, chunk);
    }
    for (const std::string& chunk : params.deletes) txn.exec_prepared(pg_queries::kDeleteJobsName, chunk);
    for (const std::string& chunk : params.set_paused) txn.exec_prepared(pg_queries::kSetPausedName, chunk);
    txn.commit();
    return Status::Ok();
  });
}

StatusOr<std::optional<StoredJob>> PgJobStore::GetJob(const std::string& id) {
  std::optional<StoredJob> job;
  Status st = session_.Run("get job", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    if (Status st = LoadShardCount(txn); !st.ok()) return st;
    pqxx::result r = txn.exec_prepared(pg_queries::kGetJobInShardName, id, ShardForId(id, shard_count_));
    if (r.empty()) r = txn.exec_prepared(pg_queries::kGetJobName, id);
    if (!r.empty()) job = StoredJobFromRow(r[0]);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return job;
}

Status PgJobStore::LoadShardCount(pqxx::transaction_base& txn) {
  if (shard_count_ > 0) return Status::Ok();
  const pqxx::result r = txn.exec_prepared(pg_queries::kGetShardCountName);
  int32_t n = 0;
  if (!r.empty() && !r[0][0].is_null()) {
    const char* text = r[0][0].c_str();
    const char* text_end = text + r[0][0].size();
    const auto [end, ec] = std::from_chars(text, text_end, n);
    if (ec != std::errc() || end != text_end) n = 0;
  }
  if (n <= 0) return Status::FailedPrecondition("the database records no shard_count: run `belfry migrate`");
  shard_count_ = n;
  return Status::Ok();
}

StatusOr<std::vector<StoredJob>> PgJobStore::ListJobs(const JobListFilter& filter) {
  const int32_t limit = std::clamp(filter.limit, 1, 1000);
  std::vector<StoredJob> jobs;
  Status st = session_.Run("list jobs", [&](pqxx::connection& conn) {
    namespace q = pg_queries;
    pqxx::nontransaction txn(conn);
    pqxx::result r;
    const bool by_owner = !filter.owner.empty();
    const bool by_topic = !filter.topic.empty();
    if (by_owner && by_topic) {
      r = txn.exec_prepared(q::kListJobsByOwnerTopicName, filter.after_id, limit, filter.owner, filter.topic);
    } else if (by_owner) {
      r = txn.exec_prepared(q::kListJobsByOwnerName, filter.after_id, limit, filter.owner);
    } else if (by_topic) {
      r = txn.exec_prepared(q::kListJobsByTopicName, filter.after_id, limit, filter.topic);
    } else {
      r = txn.exec_prepared(q::kListJobsName, filter.after_id, limit);
    }
    jobs.reserve(r.size());
    for (const pqxx::row& row : r) jobs.push_back(StoredJobFromRow(row));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return jobs;
}

StatusOr<std::string> PgJobStore::ExplainDueQuery(const DueQuery& q) {
  DueQuery minute = q;
  minute.first_minute = q.last_minute;
  StatusOr<std::string> phases = PhaseArrayLiteral(minute);
  if (!phases.ok()) return phases.status();
  const int64_t slot_ms = q.last_minute * 60'000 + static_cast<int64_t>(q.shard) * q.tick_ms;
  std::string plan;
  Status st = session_.Run("explain due query", [&](pqxx::connection& conn) {
    pqxx::read_transaction txn(conn);
    const struct {
      const char* name;
      const char* title;
    } parts[] = {{pg_queries::kExplainDueJobsHighName, "-- priority > 0"},
                 {pg_queries::kExplainDueJobsName, "-- priority = 0"},
                 {pg_queries::kExplainDueJobsLowName, "-- priority < 0"}};
    for (const auto& part : parts) {
      plan += part.title;
      plan += '\n';
      const pqxx::result r = txn.exec_prepared(part.name, q.shard, *phases, slot_ms);
      for (const pqxx::row& row : r) {
        plan += row[0].c_str();
        plan += '\n';
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return plan;
}

StatusOr<int64_t> PgJobStore::SweepOneShots(int64_t before_minute, int32_t max_rows) {
  int64_t deleted = 0;
  Status st = session_.Run("sweep one-shots", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    deleted = txn.exec_prepared(pg_queries::kSweepOneShotsName, before_minute, max_rows).affected_rows();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return deleted;
}

StatusOr<int64_t> PgJobStore::CountJobs() {
  int64_t count = 0;
  Status st = session_.Run("count jobs", [&](pqxx::connection& conn) {
    pqxx::nontransaction txn(conn);
    count = txn.exec_prepared(pg_queries::kCountJobsName)[0][0].as<int64_t>();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return count;
}

}  // namespace belfry
