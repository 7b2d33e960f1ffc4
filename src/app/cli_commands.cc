#include "app/cli_commands.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <unistd.h>

#include "app/app_support.h"
#include "app/system_clock.h"
#include "belfry/stop_signal.h"
#include "core/calendar_schedule.h"
#include "core/derived_row_id.h"
#include "core/execution_report.h"
#include "core/fire_limit.h"
#include "core/iso_time.h"
#include "core/job_change.h"
#include "core/job_json.h"
#include "core/bulk_op_json.h"
#include "core/bulk_selector.h"
#include "core/job_labels.h"
#include "core/layout_due_query.h"
#include "core/layout_next_fires.h"
#include "core/load_projection.h"
#include "core/load_rebalance.h"
#include "core/pagination.h"
#include "core/resource_views.h"
#include "core/shard_lag.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "kafka/command_publisher.h"
#include "kafka/topic_admin.h"
#include "kafka/topic_tail.h"
#include "pg/migrator.h"
#include "pg/pg_execution_store.h"
#include "pg/pg_job_store.h"
#include "pg/pg_reshard.h"
#include "pg/pg_shard_ledger.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

int Fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "belfry: %s\n", message.c_str());
  return code;
}

// --label key=value terms into a JSON object; belfry's parser checks the rules. Returns an error
// message, or "" when every term is key=value.
std::string AddLabelTerms(const std::vector<std::string>& terms, nlohmann::ordered_json* labels) {
  for (const std::string& term : terms) {
    const auto split = SplitLabelTerm(term);
    if (!split) return fmt::format("--label {} is not key=value", term);
    (*labels)[std::string(split->first)] = std::string(split->second);
  }
  return {};
}

// Who runs the CLI, for the audit trail's belfry-actor header (a command's own "actor" wins):
// "<login>@<host>", or "belfry-cli" when neither is known.
std::string CliActor() {
  const char* user = std::getenv("USER");
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  std::string actor = fmt::format("{}@{}", user != nullptr && *user != 0 ? user : "belfry-cli", host);
  if (host[0] == 0) actor.pop_back();
  // The parser's rules for an actor: at most 255 bytes, no control characters.
  std::erase_if(actor, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (actor.size() > 255) actor.resize(255);
  return actor;
}

// Publishes one command, with the CLI's belfry-actor header, and, if asked, waits for and prints
// its outcome.
int PublishCommand(const Config& cfg, const std::string& id, const std::optional<std::string>& value,
                   const WaitArgs& wait) {
  CommandPublisherOptions options;
  options.wait_for_outcomes = wait.wait;
  auto publisher = CommandPublisher::Create(cfg.kafka, options);
  if (!publisher.ok()) return Fail(publisher.status().message());
  if (Status st = (*publisher)->Publish(id, value, {{"belfry-actor", CliActor()}}); !st.ok()) {
    return Fail(fmt::format("could not publish to {}: {}", cfg.kafka.commands_topic, st.message()));
  }
  if (!wait.wait) {
    std::printf("published to %s (not waiting for the outcome)\n", cfg.kafka.commands_topic.c_str());
    return 0;
  }
  auto outcome = (*publisher)->WaitForOutcome(id, wait.timeout_ms);
  if (!outcome.ok()) {
    return Fail(fmt::format("published, but no outcome on {} within {} ms (is belfry serve running?)",
                            cfg.kafka.results_topic, wait.timeout_ms),
                3);
  }
  std::printf("%s\n", outcome->c_str());
  const auto parsed = nlohmann::json::parse(*outcome, nullptr, false);
  return parsed.is_object() && parsed.value("status", "") == "applied" ? 0 : 1;
}

std::string FormatOptionalTime(const std::optional<EpochMs>& t) { return t ? FormatIsoTime(*t) : "-"; }

// "<prefix><UTC slot>  <local wall time>[  dst:<mark>]", one line of `jobs next` and `jobs get`.
void PrintNextFire(const char* prefix, const NextFire& f) {
  const char* mark = CalendarMarkName(f.mark);
  std::printf("%s%s  %s%s%s\n", prefix, FormatIsoTime(f.at).c_str(), f.local.c_str(), *mark ? "  dst:" : "", mark);
}

}  // namespace

int RunMigrate(const Config& cfg, bool create_topics) {
  const std::string dir = ResolveMigrationsDir(cfg);
  if (Status st = Migrate(cfg.database_url, dir, cfg.scheduler.shard_count); !st.ok()) {
    return Fail(fmt::format("migrate failed: {}", st.message()));
  }
  std::printf("database schema is current (migrations from %s, shard_count %d)\n", dir.c_str(),
              cfg.scheduler.shard_count);
  if (create_topics) {
    std::vector<TopicSpec> topics = BelfryTopicSpecs(cfg.kafka);
    topics.push_back(TopicSpec{cfg.kafka.executions_topic, 12, -1, {}});
    topics.push_back(TopicSpec{cfg.kafka.executions_dlq_topic, 3, -1, {}});
    if (Status st = EnsureTopics(cfg.kafka, topics); !st.ok()) {
      return Fail(fmt::format("creating Kafka topics failed: {}", st.message()));
    }
    std::printf("kafka topics exist: %s, %s, %s, %s, %s, %s, %s\n", cfg.kafka.commands_topic.c_str(),
                cfg.kafka.dlq_topic.c_str(), cfg.kafka.results_topic.c_str(), cfg.kafka.executions_topic.c_str(),
                cfg.kafka.executions_dlq_topic.c_str(), cfg.kafka.changes_topic.c_str(),
                cfg.kafka.triggers_dlq_topic.c_str());
  }
  return 0;
}

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

int RunBulk(const Config& cfg, const BulkArgs& args, const WaitArgs& wait) {
  if (args.owner.empty() && args.labels.empty()) {
    return Fail("a bulk operation needs --owner or at least one --label (it never selects every job)", 64);
  }
  std::string id = args.id;
  if (id.empty()) {  // unique enough for one operator: the op, the time and a random suffix
    id = fmt::format("bulk-{}-{}-{:06x}", args.op, SystemClock().NowMs(), std::random_device{}() & 0xffffff);
  }
  nlohmann::ordered_json selector = nlohmann::ordered_json::object();
  if (!args.owner.empty()) selector["owner"] = args.owner;
  if (!args.labels.empty()) {
    if (std::string e = AddLabelTerms(args.labels, &selector["labels"]); !e.empty()) return Fail(e, 64);
  }
  nlohmann::ordered_json cmd = {{"op", args.op}, {"id", id}, {"selector", selector}};
  if (!args.reason.empty()) cmd["reason"] = args.reason;
  if (!args.actor.empty()) cmd["actor"] = args.actor;
  if (args.dry_run) cmd["dryRun"] = true;
  std::printf("bulk operation %s\n", id.c_str());
  return PublishCommand(cfg, id, cmd.dump(), wait);
}

int RunBulkGet(const Config& cfg, const std::string& id) {
  PgJobStore store(cfg.database_url);
  StatusOr<std::optional<BulkOpState>> op = store.GetBulkOp(id);
  if (!op.ok()) return Fail(op.status().ToString(), 69);
  if (!op->has_value()) return Fail(fmt::format("bulk operation '{}' not found", id), 1);
  std::printf("%s\n", EncodeBulkOpJson(**op).c_str());
  return 0;
}

int RunBulkList(const Config& cfg, int limit) {
  PgJobStore store(cfg.database_url);
  StatusOr<std::vector<BulkOpState>> ops = store.ListBulkOps(limit);
  if (!ops.ok()) return Fail(ops.status().ToString(), 69);
  std::printf("%-40s %-8s %-9s %10s %10s  %s\n", "ID", "OP", "STATE", "MATCHED", "CHANGED", "SELECTOR");
  for (const BulkOpState& s : *ops) {
    std::printf("%-40s %-8s %-9s %10lld %10lld  %s%s\n", s.op.id.c_str(), CommandOpName(s.op.op),
                s.finished_at ? "finished" : "running", static_cast<long long>(s.matched),
                static_cast<long long>(s.changed), EncodeBulkSelector(s.op.selector).c_str(),
                s.op.dry_run ? " (dry run)" : "");
  }
  return 0;
}

// The database's shard layout record, which every view of slots, lag and load takes (never the
// configured shard_count: a reshard changes the record under the config).
static StatusOr<ShardLayout> DatabaseLayout(const Config& cfg) {
  return PgShardLedger(cfg.database_url).ReadLayout();
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

int RunJobsHistory(const Config& cfg, const std::string& id, int limit, const std::string& cursor,
                   const std::string& output) {
  if (Status st = CheckPageLimit(limit, kExecutionPage.max_limit); !st.ok()) return Fail(st.message(), 64);
  std::string position;
  if (!cursor.empty()) {
    std::optional<std::string> decoded = DecodePageCursor(cursor);
    if (!decoded) return Fail(std::string(kInvalidCursorMessage), 64);
    position = std::move(*decoded);
  }
  SystemClock clock;
  PgExecutionStore store(cfg.database_url, MakeRetryRules(cfg), clock);
  auto page = store.ListExecutions(id, limit, position);
  if (!page.ok()) {
    if (page.status().code() == Status::Code::kInvalid) return Fail(std::string(kInvalidCursorMessage), 64);
    return Fail(page.status().message());
  }
  if (output == "json") {
    std::printf("%s\n", EncodeExecutionPage(id, *page).c_str());
    return 0;
  }
  std::printf("%-26s %7s %-10s %-26s %-20s %s\n", "SCHEDULED FOR", "ATTEMPT", "STATUS", "FINISHED", "WORKER", "ERROR");
  for (const ExecutionRecord& rec : page->records) {
    const ExecutionReport& r = rec.report;
    std::printf("%-26s %7d %-10s %-26s %-20s %s\n", FormatIsoTime(r.scheduled_for_ms).c_str(), r.attempt,
                ExecutionStatusName(r.status), FormatOptionalTime(r.finished_at).c_str(),
                r.worker.empty() ? "-" : r.worker.c_str(), r.error.c_str());
  }
  if (!page->next_cursor.empty()) std::printf("more: --cursor '%s'\n", EncodePageCursor(page->next_cursor).c_str());
  return 0;
}

namespace {

// What a change did, in a few words: created, deleted, what it fired, or the fields it changed.
std::string DescribeChange(const JobChange& c) {
  if (!c.detail_json.empty()) {
    const nlohmann::json d = nlohmann::json::parse(c.detail_json, nullptr, false);
    const int64_t slots = d.is_object() && d.contains("slots") ? d["slots"].get<int64_t>() : 0;
    return fmt::format("fired {} slot{}", slots, slots == 1 ? "" : "s");
  }
  if (c.before_json.empty()) return "created";
  if (c.after_json.empty()) return "deleted";
  const nlohmann::json before = nlohmann::json::parse(c.before_json, nullptr, false);
  const nlohmann::json after = nlohmann::json::parse(c.after_json, nullptr, false);
  if (!before.is_object() || !after.is_object()) return "changed";
  std::vector<std::string> fields;
  for (const auto& [k, v] : after.items()) {
    if (k == "updatedAt") continue;
    if (!before.contains(k) || before[k] != v) {
      fields.push_back(v.is_primitive() ? fmt::format("{}={}", k, v.dump()) : k);
    }
  }
  return fields.empty() ? "changed" : fmt::format("{}", fmt::join(fields, " "));
}

}  // namespace

int RunJobsAudit(const Config& cfg, const std::string& id, int limit, int64_t cursor, const std::string& output) {
  if (Status st = CheckPageLimit(limit, kChangePage.max_limit); !st.ok()) return Fail(st.message(), 64);
  PgJobStore store(cfg.database_url);
  StatusOr<std::vector<JobChange>> page = store.ListJobChanges(id, cursor, limit);
  if (!page.ok()) return Fail(page.status().message());
  if (output == "json") {
    std::printf("%s\n", EncodeJobChangePage(id, *page, limit).c_str());
    return 0;
  }
  std::printf("%-10s %-24s %-8s %-20s %-14s %-20s %s\n", "CHANGE", "CHANGED AT", "OP", "ACTOR", "SOURCE", "BULK OP",
              "WHAT (REASON)");
  for (const JobChange& c : *page) {
    const std::string what = DescribeChange(c) + (c.reason.empty() ? "" : " (" + c.reason + ")");
    std::printf("%-10lld %-24s %-8s %-20s %-14s %-20s %s\n", static_cast<long long>(c.change_id),
                FormatIsoTime(c.changed_at).c_str(), c.op.c_str(), c.actor.empty() ? "-" : c.actor.c_str(),
                fmt::format("{}/{}", c.source.partition, c.source.offset).c_str(),
                c.bulk_id.empty() ? "-" : c.bulk_id.c_str(), what.c_str());
  }
  if (!page->empty() && static_cast<int>(page->size()) == limit) {
    std::printf("more: --cursor %lld\n", static_cast<long long>(page->back().change_id));
  }
  return 0;
}

int RunJobsList(const Config& cfg, const std::string& owner, const std::string& topic,
                const std::vector<std::string>& labels, int limit, const std::string& cursor,
                const std::string& output) {
  if (Status st = CheckPageLimit(limit, kJobListPage.max_limit); !st.ok()) return Fail(st.message(), 64);
  JobListFilter filter;
  filter.owner = owner;
  filter.topic = topic;
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
    std::printf("%s\n", EncodeJobPage(*read).c_str());
    return 0;
  }
  std::printf("%-40s %-16s %-28s %-24s %5s %s\n", "ID", "OWNER", "TOPIC", "SCHEDULE", "SHARD", "STATUS");
  for (const StoredJob& j : read->jobs) {
    const JobSpec& s = j.spec;
    const std::string schedule = s.calendar    ? s.calendar->cron + " " + s.calendar->time_zone
                                 : s.one_shot() ? "once " + FormatIsoTime(s.run_minute * 60'000)
                                                : fmt::format("every {}m +{}", s.interval_minutes, s.offset_minutes);
    std::printf("%-40s %-16s %-28s %-24s %5d %s\n", s.id.c_str(), s.owner.c_str(), s.topic.c_str(), schedule.c_str(),
                s.shard, j.paused ? "paused" : "active");
  }
  if (!read->next_after_id.empty()) {
    std::printf("more: --cursor '%s'\n", EncodePageCursor(read->next_after_id).c_str());
  }
  return 0;
}

int RunJobsNext(const Config& cfg, const std::string& id, int n) {
  PgJobStore store(cfg.database_url);
  auto job = store.GetJob(id);
  if (!job.ok()) return Fail(job.status().message());
  if (!job->has_value()) return Fail(fmt::format("no job with id '{}'", id), 4);
  const StoredJob& j = **job;
  if (j.paused) {
    std::printf("job '%s' is paused: it has no next triggers until resumed\n", id.c_str());
    return 0;
  }
  const StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
  if (!layout.ok()) return Fail(layout.status().message());
  for (const NextFire& f :
       LayoutNextFires(SystemTimeZones(), j.spec, j.paused, *layout, SystemClock().NowMs(), n)) {
    PrintNextFire("", f);
  }
  return 0;
}

int RunRebalance(const Config& cfg, int example_ids, bool json) {
  PgJobStore store(cfg.database_url);
  StatusOr<RebalancePlan> plan = ProposeRebalance(store, example_ids);
  if (!plan.ok()) return Fail(plan.status().message());
  if (json) {
    std::printf("%s\n", EncodeRebalancePlanJson(*plan).c_str());
    return 0;
  }
  const auto hhmm = [](int32_t d) { return fmt::format("{:02}:{:02}", d / 60, d % 60); };
  std::printf("interval jobs: %lld (%lld pinned, %lld movable); %.0f triggers per minute on average\n",
              static_cast<long long>(plan->jobs), static_cast<long long>(plan->pinned),
              static_cast<long long>(plan->movable), plan->mean);
  std::printf("busiest minute of the UTC day now: %s with %lld; after the moves: %s with %lld\n",
              hhmm(plan->peak_minute_before).c_str(), static_cast<long long>(plan->peak_before),
              hhmm(plan->peak_minute_after).c_str(), static_cast<long long>(plan->peak_after));
  std::printf("%lld jobs to move (dry run: nothing changed)\n\n", static_cast<long long>(plan->jobs_moved));
  std::printf("%8s %6s %6s %10s  %s\n", "INTERVAL", "FROM", "TO", "JOBS", "EXAMPLES");
  for (const OffsetMove& m : plan->moves) {
    std::string examples;
    for (const std::string& id : m.example_ids) examples += (examples.empty() ? "" : " ") + id;
    std::printf("%7dm %6d %6d %10lld  %s\n", m.interval_minutes, m.from_offset, m.to_offset,
                static_cast<long long>(m.jobs), examples.c_str());
  }
  return 0;
}

int RunLoad(const Config& cfg, const std::string& from, const std::string& to, const std::string& by, int top,
            bool with_shards, bool json) {
  const StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
  if (!layout.ok()) return Fail(layout.status().message());
  StatusOr<LoadWindow> window = ParseLoadWindow(from, to, SystemClock().NowMs(), *layout, cfg.scheduler.intervals);
  if (!window.ok()) return Fail(window.status().message());
  PgJobStore store(cfg.database_url);
  StatusOr<LoadGroups> read = store.ReadLoadGroups(LoadGroupQuery{window->first_minute, window->last_minute, by});
  if (!read.ok()) return Fail(read.status().message());
  const LoadProjection p = ProjectLoad(SystemTimeZones(), *window, *read);
  if (json) {
    std::printf("%s\n", EncodeLoadProjectionJson(p, by, with_shards, top).c_str());
    return 0;
  }
  std::printf("%-17s %10s %18s %18s\n", "MINUTE (UTC)", "TRIGGERS", "BUSIEST SHARD", "BUSIEST SECOND");
  int64_t peak = -1, peak_minute = window->first_minute;
  for (int64_t m = window->first_minute; m <= window->last_minute; ++m) {
    const LoadProjection::MinuteSummary sum = p.Summarize(m);
    if (sum.total > peak) peak = sum.total, peak_minute = m;
    std::printf("%-17s %10lld %18s %18s\n", FormatIsoTime(m * kMsPerMinute).substr(0, 16).c_str(),
                static_cast<long long>(sum.total), fmt::format("{} ({})", sum.shard, sum.shard_triggers).c_str(),
                fmt::format(":{:02} ({})", sum.second, sum.second_triggers).c_str());
  }
  std::printf("total %lld triggers; busiest minute %s with %lld\n", static_cast<long long>(p.total),
              FormatIsoTime(peak_minute * kMsPerMinute).substr(0, 16).c_str(), static_cast<long long>(peak));
  if (!by.empty()) {
    std::printf("\n%-40s %10s\n", by == "owner" ? "OWNER" : "TOPIC", "TRIGGERS");
    for (size_t i = 0; i < p.by_label.size() && i < static_cast<size_t>(top); ++i) {
      std::printf("%-40s %10lld\n", p.by_label[i].label.c_str(), static_cast<long long>(p.by_label[i].triggers));
    }
  }
  return 0;
}

int RunShards(const Config& cfg, bool json) {
  PgShardLedger ledger(cfg.database_url);
  const StatusOr<ShardLayout> layout = ledger.ReadLayout();
  if (!layout.ok()) return Fail(layout.status().message());
  auto states = ledger.LoadStates();
  if (!states.ok()) return Fail(states.status().message());
  const EpochMs now = SystemClock().NowMs();
  if (json) {
    std::printf("%s\n", EncodeShardsView(*states, *layout, now).c_str());
    return 0;
  }
  std::printf("%5s %-20s %8s %6s %-32s %s\n", "SHARD", "FIRED THROUGH", "LAG", "DEBT", "CLAIMED BY", "");
  for (const ShardState& s : *states) {
    const ShardLag lag = ComputeShardLag(s, now, *layout);
    const int64_t lag_s = static_cast<int64_t>(lag.lag_seconds.value_or(0));
    std::printf("%5d %-20s %7llds %6lld %-32s %s\n", s.shard,
                s.fired_through ? FormatIsoTime(*s.fired_through * kMsPerMinute).substr(0, 16).c_str() : "never",
                static_cast<long long>(lag_s), static_cast<long long>(s.debt_minutes),
                s.claim_node.empty() ? "-" : s.claim_node.c_str(), s.claim_live ? "(live)" : "");
  }
  return 0;
}

int RunExplain(const Config& cfg, int shard, const std::string& at) {
  EpochMs t = SystemClock().NowMs();
  if (!at.empty()) {
    auto parsed = ParseIsoTime(at);
    if (!parsed) return Fail(fmt::format("--at: '{}' is not an ISO-8601 time", at), 64);
    t = *parsed;
  }
  const int64_t minute = EpochMinuteOf(t);
  // The query the firer would run: by the database's shard layout for that minute
  // (docs/resharding.md), which decides the shard count and tick, not the config's.
  StatusOr<ShardLayout> layout = DatabaseLayout(cfg);
  if (!layout.ok()) return Fail(layout.status().message());
  const MinuteLayout firing = FiringLayout(*layout, minute);
  if (shard >= firing.shard_count) {
    return Fail(fmt::format("--shard must be below the shard count of that minute ({})", firing.shard_count), 64);
  }
  const DueQuery q = LayoutDueQuery(*layout, cfg.scheduler.intervals, shard, minute, minute);
  PgJobStore store(cfg.database_url);
  auto plan = store.ExplainDueQuery(q);
  if (!plan.ok()) return Fail(plan.status().message());
  std::printf("tick query for shard %d, minute %s:\n%s\n", shard, FormatIsoTime(minute * kMsPerMinute).c_str(),
              plan->c_str());
  return 0;
}

int RunWatch(const Config& cfg, const std::vector<std::string>& topics, bool from_beginning) {
  StopSignal stop;
  TopicTailOptions options;
  options.from_beginning = from_beginning;
  auto tail = TopicTail::Create(cfg.kafka, topics, options);
  if (!tail.ok()) return Fail(tail.status().message());
  std::signal(SIGINT, [](int) { std::_Exit(0); });
  std::signal(SIGTERM, [](int) { std::_Exit(0); });
  SystemClock clock;
  std::fprintf(stderr, "watching %zu topic(s); Ctrl-C to stop\n", topics.size());
  (*tail)->Run(stop, [&clock](const TailRecord& r) {
    const EpochMs now = clock.NowMs();
    auto it = r.headers.find("belfry-scheduled-for");
    std::string late = "";
    if (it != r.headers.end()) {
      const long long scheduled = std::atoll(it->second.c_str());
      late = fmt::format(" scheduledFor={} late={}ms", FormatIsoTime(scheduled), now - scheduled);
    }
    std::printf("%s %s key=%s%s %s\n", FormatIsoTime(now).substr(11).c_str(), r.topic.c_str(),
                r.key.value_or("").c_str(), late.c_str(), r.value.value_or("null").c_str());
    std::fflush(stdout);
  });
  return 0;
}

}  // namespace belfry
