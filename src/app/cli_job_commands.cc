// `belfry jobs put|delete|pause|resume|trigger|backfill` (commands published to Kafka) and
// `belfry jobs get|list|next` (reads of the stored jobs).
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "app/system_clock.h"
#include "core/calendar_schedule.h"
#include "core/derived_row_id.h"
#include "core/execution_report.h"
#include "core/iso_time.h"
#include "core/job_labels.h"
#include "core/layout_next_fires.h"
#include "core/pagination.h"
#include "core/resource_views.h"
#include "core/slot_math.h"
#include "pg/pg_job_store.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

// "<prefix><UTC slot>  <local wall time>[  dst:<mark>]", one line of `jobs next` and `jobs get`.
void PrintNextFire(const char* prefix, const NextFire& f) {
  const char* mark = CalendarMarkName(f.mark);
  std::printf("%s%s  %s%s%s\n", prefix, FormatIsoTime(f.at).c_str(), f.local.c_str(), *mark ? "  dst:" : "", mark);
}

}  // namespace

int RunJobsPut(const Config& cfg, const PutJobArgs& a, const WaitArgs& wait) {
  nlohmann::ordered_json cmd = nlohmann::ordered_json::object();
  if (!a.file.empty()) {
    std::stringstream ss;
    if (a.file == "-") {
      ss << std::cin.rdbuf();
    } else {
      std::ifstream in(a.file);
      if (!in) return Fail(fmt::format("cannot read '{}'", a.file), 64);
      ss << in.rdbuf();
    }
    cmd = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
    if (!cmd.is_object()) return Fail(fmt::format("'{}' does not hold a JSON object", a.file), 64);
  }
  if (!cmd.contains("op")) cmd["op"] = "upsert";
  if (!a.id.empty()) cmd["id"] = a.id;
  if (!a.owner.empty()) cmd["owner"] = a.owner;
  if (!a.topic.empty()) cmd["topic"] = a.topic;
  if (!a.key.empty()) cmd["key"] = a.key;
  if (!a.every.empty()) cmd["executionInterval"] = a.every;
  if (a.interval_minutes) cmd["intervalMinutes"] = *a.interval_minutes;
  if (a.offset_minutes) cmd["offsetMinutes"] = *a.offset_minutes;
  if (a.priority) cmd["priority"] = *a.priority;
  if (a.max_retries) cmd["maxRetries"] = *a.max_retries;
  if (a.max_fires) cmd["maxFires"] = *a.max_fires;
  if (!a.labels.empty()) {
    if (std::string e = AddLabelTerms(a.labels, &cmd["labels"]); !e.empty()) return Fail(e, 64);
  }
  if (a.retry_initial_seconds || a.retry_multiplier || a.retry_max_seconds) {
    nlohmann::ordered_json backoff = cmd.contains("retryBackoff") && cmd["retryBackoff"].is_object()
                                         ? cmd["retryBackoff"]
                                         : nlohmann::ordered_json::object();
    if (a.retry_initial_seconds) backoff["initialSeconds"] = *a.retry_initial_seconds;
    if (a.retry_multiplier) backoff["multiplier"] = *a.retry_multiplier;
    if (a.retry_max_seconds) backoff["maxSeconds"] = *a.retry_max_seconds;
    cmd["retryBackoff"] = backoff;
  }
  if (!a.start.empty()) cmd["startDateTime"] = a.start;
  if (!a.end.empty()) cmd["endDateTime"] = a.end;
  if (!a.run_at.empty()) cmd["runAt"] = a.run_at;
  if (!a.cron.empty()) cmd["cron"] = a.cron;
  if (!a.time_zone.empty()) cmd["timeZone"] = a.time_zone;
  if (!a.details.empty()) {
    auto details = nlohmann::ordered_json::parse(a.details, nullptr, false);
    if (!details.is_object()) return Fail("--details must be a JSON object", 64);
    cmd["jobDetails"] = details;
  }
  if (!cmd.contains("id") || !cmd["id"].is_string() || cmd["id"].get<std::string>().empty()) {
    return Fail("a job needs an id (--id or \"id\" in the file)", 64);
  }
  if (!cmd.contains("topic")) return Fail("a job needs an output topic (--topic)", 64);
  if (!cmd.contains("intervalMinutes") && !cmd.contains("executionInterval") && !cmd.contains("runAt") &&
      !cmd.contains("cron")) {
    return Fail("a job needs an interval (--interval-minutes or --every), a time (--run-at) or a --cron", 64);
  }
  // belfry validates everything else itself and reports it in the outcome.
  return PublishCommand(cfg, cmd["id"].get<std::string>(), cmd.dump(), wait);
}

int RunJobsOp(const Config& cfg, const std::string& op, const std::string& id, bool tombstone, const WaitArgs& wait,
              const std::string& reason, const std::string& actor) {
  if (id.empty()) return Fail("the job id must not be empty", 64);
  if (tombstone) return PublishCommand(cfg, id, std::nullopt, wait);
  nlohmann::ordered_json cmd = {{"op", op}, {"id", id}};
  if (!reason.empty()) cmd["reason"] = reason;
  if (!actor.empty()) cmd["actor"] = actor;
  return PublishCommand(cfg, id, cmd.dump(), wait);
}

int RunJobsBackfill(const Config& cfg, const std::string& id, const BackfillArgs& args, const WaitArgs& wait) {
  if (id.empty()) return Fail("the job id must not be empty", 64);
  nlohmann::ordered_json cmd = {{"op", "backfill"}, {"id", id}, {"from", args.from}, {"to", args.to}};
  if (args.rate_per_minute > 0) cmd["ratePerMinute"] = args.rate_per_minute;
  if (args.dry_run) cmd["dryRun"] = true;
  return PublishCommand(cfg, id, cmd.dump(), wait);
}

int RunJobsGet(const Config& cfg, const std::string& id, bool json) {
  PgJobStore store(cfg.database_url);
  auto view = store.GetJobAndStats(id);  // the admin API's read: job and counters in one statement
  if (!view.ok()) return Fail(view.status().message());
  if (!view->has_value()) return Fail(fmt::format("no job with id '{}'", id), 4);
  const StoredJob& j = (*view)->job;
  const std::optional<JobStats>& st = (*view)->stats;
  const StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
  if (!layout.ok()) return Fail(layout.status().message());
  const EpochMs now = SystemClock().NowMs();
  if (json) {
    std::printf("%s\n", EncodeJobDetailView(SystemTimeZones(), **view, st, *layout, now).c_str());
    return 0;
  }
  const std::vector<NextFire> fires = LayoutNextFires(SystemTimeZones(), j.spec, j.paused, *layout, now, kJobDetailNextFires);
  const std::optional<int64_t> remaining = LayoutFiresRemaining(SystemTimeZones(), j.spec, j.paused, j.paused_at, *layout, now);
  std::printf("id:        %s\nowner:     %s\ntopic:     %s\nkey:       %s\n", j.spec.id.c_str(), j.spec.owner.c_str(),
              j.spec.topic.c_str(), j.spec.key.empty() ? "(job id)" : j.spec.key.c_str());
  if (j.spec.one_shot()) {
    std::printf("once:      runAt %s, scheduledFor %s, shard %d\n", FormatOptionalTime(j.spec.run_at).c_str(),
                FormatIsoTime(j.spec.scheduled_for_ms).c_str(), j.spec.shard);
  } else if (j.spec.calendar) {
    std::printf("cron:      %s in %s, shard %d%s\n", j.spec.calendar->cron.c_str(), j.spec.calendar->time_zone.c_str(),
                j.spec.shard,
                j.spec.calendar->as_interval
                    ? fmt::format(" (a fixed UTC interval: every {} min, offset {})", j.spec.interval_minutes,
                                  j.spec.offset_minutes).c_str()
                    : "");
  } else {
    std::printf("interval:  %d min, offset %d, shard %d\n", j.spec.interval_minutes, j.spec.offset_minutes,
                j.spec.shard);
  }
  std::printf("priority:  %d\n", j.spec.priority);
  if (j.spec.max_retries > 0) {
    std::printf("retries:   up to %d, after %llds x%g, at most %llds\n", j.spec.max_retries,
                static_cast<long long>(j.spec.retry_backoff.initial_ms / 1000), j.spec.retry_backoff.multiplier,
                static_cast<long long>(j.spec.retry_backoff.max_ms / 1000));
  }
  if (j.spec.attempt > 0) {
    std::printf("retry:     attempt %d of job %s\n", j.spec.attempt, j.spec.retry_of.c_str());
  } else if (!j.spec.retry_of.empty()) {
    const std::optional<DerivedRowRef> derived = ParseDerivedRowId(j.spec.id);
    std::printf("manual:    a %s of job %s\n", derived ? DerivedKindName(derived->kind) : "trigger",
                j.spec.retry_of.c_str());
  }
  std::printf("window:    %s .. %s\nstatus:    %s\n", FormatOptionalTime(j.spec.requested_start_at).c_str(),
              FormatOptionalTime(j.spec.requested_end_at).c_str(), j.paused ? "paused" : "active");
  if (remaining) {
    std::printf("fires:     %lld of %d left; the last by %s\n", static_cast<long long>(*remaining), *j.spec.max_fires,
                FormatOptionalTime(j.spec.end_at).c_str());
  }
  if (j.paused) {
    std::printf("paused:    since %s%s%s%s%s\n", FormatOptionalTime(j.paused_at).c_str(),
                j.pause_actor.empty() ? "" : " by ", j.pause_actor.c_str(), j.pause_reason.empty() ? "" : ": ",
                j.pause_reason.c_str());
  }
  if (fires.empty()) std::printf("next:      -\n");
  for (size_t i = 0; i < fires.size(); ++i) PrintNextFire(i == 0 ? "next:      " : "           ", fires[i]);
  std::printf("details:   %s\n", j.spec.details_json.c_str());
  if (st && st->last_status) {
    std::printf("last:      %s for %s (attempt %d)%s%s\nfailures:  %lld in a row; %lld succeeded, %lld failed in all\n",
                ExecutionStatusName(*st->last_status), FormatIsoTime(st->last_scheduled_for_ms).c_str(),
                st->last_attempt, st->last_error.empty() ? "" : ": ", st->last_error.c_str(),
                static_cast<long long>(st->consecutive_failures), static_cast<long long>(st->total_succeeded),
                static_cast<long long>(st->total_failed));
  } else {
    std::printf("last:      - (no outcome reported)\n");
  }
  if (const std::optional<DeliveryErrorRecord>& e = (*view)->last_delivery_error) {
    std::printf("refused:   slot %s to %s at %s, dead-lettered: %s\n", FormatIsoTime(e->slot_ms).c_str(),
                e->topic.c_str(), FormatIsoTime(e->at_ms).c_str(), e->error.c_str());
  }
  return 0;
}

int RunJobsList(const Config& cfg, const std::string& owner, const std::string& topic,
                const std::vector<std::string>& labels, const std::string& id_prefix, int limit,
                const std::string& cursor, const std::string& output) {
  if (Status st = CheckPageLimit(limit, kJobListPage.max_limit); !st.ok()) return Fail(st.message(), 64);
  JobListFilter filter;
  filter.owner = owner;
  filter.topic = topic;
  filter.id_prefix = id_prefix;
  if (!cursor.empty()) {
    std::optional<std::string> after = DecodePageCursor(cursor);
    if (!after) return Fail(std::string(kInvalidCursorMessage), 64);
    filter.after_id = std::move(*after);
  }
  filter.limit = limit;
  if (!labels.empty()) {
    if (Status s = ParseLabelFilter(labels, &filter.labels); !s.ok()) return Fail(s.message(), 64);
  }
  PgJobStore store(cfg.database_url);
  auto read = store.ListJobs(filter);
  if (!read.ok()) return Fail(read.status().message());
  if (output == "json") {
    const StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
    if (!layout.ok()) return Fail(layout.status().message());
    std::printf("%s\n", EncodeJobPage(SystemTimeZones(), *read, *layout, SystemClock().NowMs()).c_str());
    return 0;
  }
  std::printf("%-40s %-16s %-28s %-24s %5s %s\n", "ID", "OWNER", "TOPIC", "SCHEDULE", "SHARD", "STATUS");
  for (const StoredJob& j : read->jobs) {
    const JobSpec& s = j.spec;
    const std::string schedule = s.calendar    ? s.calendar->cron + " " + s.calendar->time_zone
                                 : s.one_shot() ? "once " + FormatIsoTime(MinuteStartMs(s.run_minute))
                                                : fmt::format("every {}m +{}", s.interval_minutes, s.offset_minutes);
    std::printf("%-40s %-16s %-28s %-24s %5d %s\n", s.id.c_str(), s.owner.c_str(), s.topic.c_str(), schedule.c_str(),
                s.shard, j.paused ? "paused" : "active");
  }
  if (!read->next_after_id.empty()) {
    std::printf("more: --cursor '%s'\n", EncodePageCursor(read->next_after_id).c_str());
  }
  return 0;
}

int RunJobsNext(const Config& cfg, const std::string& id, int n, bool json) {
  PgJobStore store(cfg.database_url);
  auto job = store.GetJob(id);
  if (!job.ok()) return Fail(job.status().message());
  if (!job->has_value()) return Fail(fmt::format("no job with id '{}'", id), 4);
  const StoredJob& j = **job;
  if (j.paused && !json) {
    std::printf("job '%s' is paused: it has no next triggers until resumed\n", id.c_str());
    return 0;
  }
  const StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
  if (!layout.ok()) return Fail(layout.status().message());
  const std::vector<NextFire> fires =
      LayoutNextFires(SystemTimeZones(), j.spec, j.paused, *layout, SystemClock().NowMs(), n);
  if (json) {
    std::printf("%s\n", EncodeNextFiresView(j, fires).c_str());
    return 0;
  }
  for (const NextFire& f : fires) PrintNextFire("", f);
  return 0;
}

}  // namespace belfry
