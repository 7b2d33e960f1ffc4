#include "fakes/fake_job_store.h"

#include <algorithm>

#include "core/bulk_selector.h"
#include "core/bulk_walk.h"
#include "core/calendar_schedule.h"
#include "core/job_labels.h"
#include "core/slot_math.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {

void FakeJobStore::Put(const JobSpec& spec, bool paused) {
  std::lock_guard<std::mutex> lock(mu_);
  rows_[spec.id] = Row{spec, paused, {}};
}

std::map<std::string, FakeJobStore::Row> FakeJobStore::rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rows_;
}

Status FakeJobStore::ForEachDueJob(const DueQuery& q, const std::function<void(const DueJob&)>& fn) {
  std::vector<Row> copies;
  std::vector<int64_t> due_minutes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++queries_;
    read_fences_.push_back(q.read_fence);
    if (fail_queries_ > 0 && pass_queries_ == 0) {
      --fail_queries_;
      return Status::Retryable("injected query failure");
    }
    if (pass_queries_ > 0) --pass_queries_;
    for (const auto& [id, row] : rows_) {
      const JobSpec& s = row.spec;
      // spec.shard is the stored shard; a query reads q.stored_shards ({shard} when empty).
      const bool in_query = q.stored_shards.empty()
                                ? s.shard == q.shard
                                : std::find(q.stored_shards.begin(), q.stored_shards.end(), s.shard) !=
                                      q.stored_shards.end();
      if (!in_query || row.paused) continue;
      if (s.one_shot()) {  // like the real store: phase -run_minute, no late move (no ledger here)
        if (s.run_minute >= q.first_minute && s.run_minute <= q.last_minute) {
          copies.push_back(row);
          due_minutes.push_back(s.run_minute);
        }
        continue;
      }
      if (s.calendar_slots()) {  // like the real store: every minute of the query, latest first
        const StatusOr<CronExpression> cron = ParseCronExpression(s.calendar->cron);
        const StatusOr<const TimeZone*> zone = LocateTimeZone(SystemTimeZones(), s.calendar->time_zone);
        if (!cron.ok() || !zone.ok()) continue;
        for (int64_t m = q.last_minute; m >= q.first_minute; --m) {
          const EpochMs slot = SlotMs(m, q.shard, q.tick_ms);
          if ((s.start_at && *s.start_at > slot) || (s.end_at && *s.end_at <= slot)) continue;
          if (CronFiresAt(*cron, *zone, m)) {
            copies.push_back(row);
            due_minutes.push_back(m);
            break;
          }
        }
        continue;
      }
      bool term = false;
      for (const PhaseTerm& t : q.terms) {
        if (t.interval_minutes == s.interval_minutes &&
            std::find(t.offsets.begin(), t.offsets.end(), s.offset_minutes) != t.offsets.end()) {
          term = true;
        }
      }
      if (!term) continue;
      // The latest minute in [first, last] at which the job was really due (start/end included).
      int64_t due = -1;
      for (int64_t m = LatestDueMinute(s.interval_minutes, s.offset_minutes, q.last_minute); m >= q.first_minute;
           m -= s.interval_minutes) {
        if (IsDueAtSlot(s.interval_minutes, s.offset_minutes, s.start_at, s.end_at, false, m,
                        SlotMs(m, q.shard, q.tick_ms))) {
          due = m;
          break;
        }
      }
      if (due < 0) continue;
      copies.push_back(row);
      due_minutes.push_back(due);
    }
  }
  // Priority order, highest first; within one priority, id order (the real store's is unspecified).
  std::vector<size_t> order(copies.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return copies[a].spec.priority > copies[b].spec.priority; });
  for (size_t i : order) {
    const Row& r = copies[i];
    DueJob j;
    j.id = r.spec.id;
    j.topic = r.spec.topic;
    j.key = r.spec.key;
    j.details_json = r.spec.details_json;
    j.interval_minutes = r.spec.interval_minutes;
    j.due_minute = due_minutes[i];
    j.scheduled_for_ms = r.spec.one_shot() ? r.spec.scheduled_for_ms : 0;
    fn(j);
  }
  return Status::Ok();
}

Status FakeJobStore::ApplyActions(const std::vector<JobAction>& actions) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const JobAction& a : actions) {
    auto it = rows_.find(a.id);
    if (it != rows_.end() && it->second.source.partition == a.source.partition &&
        it->second.source.offset >= a.source.offset) {
      continue;  // replayed
    }
    switch (a.kind) {
      case JobAction::Kind::kDelete:
        if (it != rows_.end()) rows_.erase(it);
        break;
      case JobAction::Kind::kSetPaused:
        if (it != rows_.end()) {
          it->second.paused = a.paused.value_or(false);
          it->second.source = a.source;
        }
        break;
      case JobAction::Kind::kUpsert: {
        Row row{a.spec, a.paused.value_or(false), a.source};
        if (it != rows_.end() && !a.replace_fresh) {
          if (!a.spec.offset_explicit && it->second.spec.interval_minutes == a.spec.interval_minutes) {
            row.spec.offset_minutes = it->second.spec.offset_minutes;
          }
          if (!a.paused) row.paused = it->second.paused;
        }
        rows_[a.id] = row;
        break;
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::optional<StoredJob>> FakeJobStore::GetJob(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rows_.find(id);
  if (it == rows_.end()) return std::optional<StoredJob>();
  StoredJob j;
  j.spec = it->second.spec;
  j.paused = it->second.paused;
  j.source = it->second.source;
  return std::optional<StoredJob>(j);
}

StatusOr<JobPage> FakeJobStore::ListJobs(const JobListFilter& filter) {
  std::lock_guard<std::mutex> lock(mu_);
  const int32_t page_size = std::clamp(filter.limit, 1, kMaxJobPage);
  std::vector<StoredJob> out;
  for (auto it = rows_.upper_bound(filter.after_id); it != rows_.end(); ++it) {
    if (static_cast<int32_t>(out.size()) > page_size) break;
    if (!filter.owner.empty() && it->second.spec.owner != filter.owner) continue;
    if (!filter.topic.empty() && it->second.spec.topic != filter.topic) continue;
    if (!filter.labels.empty() && !LabelsContain(it->second.spec.labels_json, filter.labels)) continue;
    StoredJob j;
    j.spec = it->second.spec;
    j.paused = it->second.paused;
    out.push_back(j);
  }
  return JobPageOf(std::move(out), page_size);
}

StatusOr<std::vector<Status>> FakeJobStore::AcceptBulkOps(const std::vector<BulkOp>& ops) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Status> out;
  for (const BulkOp& op : ops) {
    auto it = std::find_if(bulk_ops_.begin(), bulk_ops_.end(), [&](const BulkOpState& s) { return s.op.id == op.id; });
    if (it == bulk_ops_.end()) {
      BulkOpState state;
      state.op = op;
      state.accepted_at = op.source.timestamp_ms;
      bulk_ops_.push_back(std::move(state));
      out.push_back(Status::Ok());
    } else if (it->op.source.partition == op.source.partition && it->op.source.offset == op.source.offset) {
      out.push_back(Status::Ok());
    } else {
      out.push_back(Status::Invalid("duplicate_bulk_id", "bulk operation id " + op.id + " was already used"));
    }
  }
  return out;
}

StatusOr<std::optional<BulkOpState>> FakeJobStore::RunBulkStep(int32_t max_jobs, EpochMs now) {
  constexpr int32_t kShardCount = 120;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(bulk_ops_.begin(), bulk_ops_.end(), [](const BulkOpState& s) { return !s.finished_at; });
  if (it == bulk_ops_.end()) return std::optional<BulkOpState>();
  BulkOpState& state = *it;
  BulkWalkPosition pos{state.next_shard, state.after_id, false};
  int64_t budget = std::max(1, max_jobs);
  for (int32_t shards = 0; !pos.finished && budget > 0 && shards < 8;) {
    const int32_t shard = pos.shard;
    std::vector<std::string> page;  // ids in order: rows_ is a map
    for (const auto& [id, row] : rows_) {
      if (row.spec.shard != shard || id <= pos.after_id || !row.spec.retry_of.empty()) continue;
      if (!BulkSelectorMatches(state.op.selector, row.spec.owner, row.spec.labels_json)) continue;
      if (!state.op.dry_run && static_cast<int64_t>(page.size()) == budget) break;
      page.push_back(id);
    }
    state.matched += static_cast<int64_t>(page.size());
    for (const std::string& id : page) {
      if (state.op.dry_run) break;
      Row& row = rows_[id];
      switch (state.op.op) {
        case CommandOp::kPause:
          if (!row.paused) ++state.changed;
          row.paused = true;
          break;
        case CommandOp::kResume:
          if (row.paused) ++state.changed;
          row.paused = false;
          break;
        case CommandOp::kDelete:
          rows_.erase(id);
          ++state.changed;
          break;
        default:
          ++state.changed;  // a trigger: counted, not stored here
      }
    }
    if (state.op.dry_run) {
      pos = NextBulkWalkShard(shard, kShardCount);
    } else {
      const size_t limit = static_cast<size_t>(budget);
      budget -= static_cast<int64_t>(page.size());
      pos = NextBulkWalkPosition(shard, page.empty() ? "" : page.back(), page.size(), limit, kShardCount);
    }
    if (pos.shard != shard) ++shards;
  }
  state.next_shard = pos.shard;
  state.after_id = pos.after_id;
  ++state.steps;
  if (pos.finished) state.finished_at = now;
  return std::optional<BulkOpState>(state);
}

StatusOr<std::vector<BulkOpState>> FakeJobStore::UnpublishedBulkOps(int32_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BulkOpState> out;
  for (const BulkOpState& s : bulk_ops_) {
    if (s.finished_at && !s.published_at && static_cast<int32_t>(out.size()) < limit) out.push_back(s);
  }
  return out;
}

int64_t FakeJobStore::AddChange(JobChange change) {
  std::lock_guard<std::mutex> lock(mu_);
  change.change_id = static_cast<int64_t>(changes_.size()) + 1;
  changes_.emplace_back(std::move(change), false);
  return changes_.back().first.change_id;
}

int64_t FakeJobStore::published_changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [c, published] : changes_) n += published ? 1 : 0;
  return n;
}

StatusOr<std::vector<JobChange>> FakeJobStore::ListJobChanges(const std::string& job_id, int64_t before_change_id,
                                                              int32_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<JobChange> out;
  for (auto it = changes_.rbegin(); it != changes_.rend() && static_cast<int32_t>(out.size()) < limit; ++it) {
    if (it->first.job_id != job_id) continue;
    if (before_change_id > 0 && it->first.change_id >= before_change_id) continue;
    out.push_back(it->first);
  }
  return out;
}

StatusOr<int64_t> FakeJobStore::PublishChanges(int32_t limit,
                                               const std::function<Status(const std::vector<JobChange>&)>& publish) {
  std::vector<JobChange> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [c, published] : changes_) {
      if (!published && static_cast<int32_t>(batch.size()) < limit) batch.push_back(c);
    }
  }
  if (batch.empty()) return int64_t{0};
  if (Status s = publish(batch); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  for (const JobChange& c : batch) changes_[static_cast<size_t>(c.change_id - 1)].second = true;
  return static_cast<int64_t>(batch.size());
}

Status FakeJobStore::MarkBulkOpPublished(const std::string& id, EpochMs now) {
  std::lock_guard<std::mutex> lock(mu_);
  for (BulkOpState& s : bulk_ops_) {
    if (s.op.id == id && !s.published_at) s.published_at = now;
  }
  return Status::Ok();
}

StatusOr<std::optional<BulkOpState>> FakeJobStore::GetBulkOp(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const BulkOpState& s : bulk_ops_) {
    if (s.op.id == id) return std::optional<BulkOpState>(s);
  }
  return std::optional<BulkOpState>();
}

StatusOr<std::vector<BulkOpState>> FakeJobStore::ListBulkOps(int32_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BulkOpState> out(bulk_ops_.rbegin(), bulk_ops_.rend());
  if (static_cast<int32_t>(out.size()) > limit) out.resize(static_cast<size_t>(limit));
  return out;
}

}  // namespace belfry
