// belfry: one binary with subcommands (design.md, "Operating it").
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "app/app_support.h"
#include "app/cli_commands.h"
#include "app/config_parser.h"
#include "app/logging.h"
#include "app/reshard_command.h"
#include "app/serve_command.h"
#include "app/system_clock.h"
#include "core/iso_time.h"
#include "core/manual_fire.h"
#include "core/pagination.h"

namespace {

// Durations on the command line use the config syntax ("30s").
int64_t DurationOrDie(const std::string& text, const char* flag) {
  auto ms = belfry::ParseDurationMs(text);
  if (!ms) {
    std::fprintf(stderr, "belfry: %s: '%s' is not a duration like 500ms, 30s or 2m\n", flag, text.c_str());
    std::exit(64);
  }
  return *ms;
}

// "<what> (1..<max>; default <default>)": the help of a flag that takes the API's bounds and
// default (core/pagination.h), so that the CLI and the API agree on them.
std::string SizeHelp(const char* what, belfry::PageSize size) {
  return fmt::format("{} (1..{}; default {})", what, size.max_limit, size.default_limit);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"belfry: fixed-interval triggers at scale, from Kafka commands, PostgreSQL and Kafka triggers"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  std::string config_path;
  app.add_option("-c,--config", config_path, "YAML config file (BELFRY_* environment variables override it)")
      ->envname("BELFRY_CONFIG");

  auto* version = app.add_subcommand("version", "Print the version");
  auto* serve = app.add_subcommand("serve", "Run the command consumer, the scheduler and the admin HTTP server");
  auto* migrate = app.add_subcommand("migrate", "Apply database migrations and create belfry's Kafka topics");
  bool skip_topics = false;
  migrate->add_flag("--skip-topics", skip_topics, "Do not create belfry's Kafka topics");

  auto* reshard = app.add_subcommand("reshard", "Grow the shard count of a running cluster (docs/resharding.md)");
  belfry::ReshardArgs reshard_args;
  std::string reshard_lead = "2m";
  reshard->add_option("--to", reshard_args.to, "The new shard count, a multiple of the current one (omit: show the status)");
  reshard->add_option("--lead", reshard_lead, "How far ahead the cut-over minute starts (default 2m)");

  auto* jobs = app.add_subcommand("jobs", "Create, change and read jobs");
  jobs->require_subcommand(1);
  belfry::PutJobArgs put_args;
  belfry::WaitArgs wait_args;
  std::string timeout_text = "30s";
  auto add_wait = [&](CLI::App* sub) {
    sub->add_flag("!--no-wait", wait_args.wait, "Do not wait for the outcome on the command-results topic");
    sub->add_option("--timeout", timeout_text, "How long to wait for the outcome (e.g. 30s)");
  };
  auto* put = jobs->add_subcommand("put", "Create or replace a job (publishes an upsert command)");
  put->add_option("-f,--file", put_args.file, "JSON command file ('-' for stdin); flags override its fields");
  put->add_option("--id", put_args.id, "Job id");
  put->add_option("--owner", put_args.owner, "Owning service");
  put->add_option("--topic", put_args.topic, "Output topic for the job's triggers");
  put->add_option("--key", put_args.key, "Kafka key of the triggers (default: the job id)");
  put->add_option("--interval-minutes", put_args.interval_minutes, "Interval in minutes");
  put->add_option("--every", put_args.every, "Interval as a name, e.g. EVERY_15_MINUTES, or ONCE");
  put->add_option("--run-at", put_args.run_at, "One-shot: fire once at this time (ISO-8601 runAt)");
  put->add_option("--offset-minutes", put_args.offset_minutes, "Offset within the interval");
  put->add_option("--cron", put_args.cron, "Calendar job: a 5-field cron expression, e.g. '0 9 * * MON-FRI'");
  put->add_option("--time-zone", put_args.time_zone, "The cron expression's IANA zone (default UTC)");
  put->add_option("--start", put_args.start, "startDateTime (ISO-8601)");
  put->add_option("--end", put_args.end, "endDateTime (ISO-8601)");
  put->add_option("--details", put_args.details, "jobDetails as a JSON object");
  put->add_option("--priority", put_args.priority, "Priority within a shard-minute");
  put->add_option("--max-retries", put_args.max_retries, "Retries of a failed execution (maxRetries, 0..100)");
  put->add_option("--max-fires", put_args.max_fires, "Stop after this many fires (maxFires, 1..100000)");
  put->add_option("--label", put_args.labels, "A label, key=value (repeat for several)");
  put->add_option("--retry-initial-seconds", put_args.retry_initial_seconds, "Delay before the first retry");
  put->add_option("--retry-multiplier", put_args.retry_multiplier, "Delay factor per further retry");
  put->add_option("--retry-max-seconds", put_args.retry_max_seconds, "Longest delay between retries");
  add_wait(put);
  std::string op_id;
  bool tombstone = false;
  auto* del = jobs->add_subcommand("delete", "Delete a job");
  del->add_option("id", op_id, "Job id")->required();
  del->add_flag("--tombstone", tombstone, "Publish a null value (tombstone) instead of {\"op\":\"delete\"}");
  add_wait(del);
  auto* pause = jobs->add_subcommand("pause", "Pause a job: it stays stored but never fires");
  pause->add_option("id", op_id, "Job id")->required();
  std::string pause_reason, pause_actor;
  pause->add_option("--reason", pause_reason, "Why (shown by jobs get until the job is resumed; at most 1024 bytes)");
  pause->add_option("--actor", pause_actor, "Who (at most 255 bytes)");
  add_wait(pause);
  auto* resume = jobs->add_subcommand("resume", "Resume a paused job");
  resume->add_option("id", op_id, "Job id")->required();
  add_wait(resume);
  auto* trigger = jobs->add_subcommand("trigger", "Fire a job once, now, with its details (its schedule is unchanged)");
  trigger->add_option("id", op_id, "Job id")->required();
  add_wait(trigger);
  belfry::BackfillArgs backfill_args;
  auto* backfill = jobs->add_subcommand(
      "backfill", "Fire a job's slots between two past instants, now, each with its own scheduledFor");
  backfill->add_option("id", op_id, "Job id")->required();
  backfill->add_option("--from", backfill_args.from, "First instant, ISO-8601 (inclusive)")->required();
  backfill->add_option("--to", backfill_args.to, "Last instant, ISO-8601 (exclusive; not in the future)")->required();
  backfill
      ->add_option("--rate", backfill_args.rate_per_minute,
                   fmt::format("Triggers per minute, at most (1..{}; default {})", belfry::kMaxBackfillRatePerMinute,
                               belfry::kDefaultBackfillRatePerMinute))
      ->check(CLI::Range(1, belfry::kMaxBackfillRatePerMinute));
  backfill->add_flag("--dry-run", backfill_args.dry_run, "Count the slots it would fire; fire nothing");
  add_wait(backfill);
  bool json = false;
  auto* get = jobs->add_subcommand("get", "Show one job");
  get->add_option("id", op_id, "Job id")->required();
  get->add_flag("--json", json, "JSON output");
  std::string owner, topic, cursor, output = "table";
  // Page sizes, counts and their bounds are the API's (core/pagination.h). One difference: the
  // CLI reads the database itself, so admin.max_list_limit, which lowers the API's largest page
  // of jobs on a node, does not apply to `jobs list`.
  int list_limit = belfry::kJobListPage.default_limit;
  int history_limit = belfry::kExecutionPage.default_limit;
  int audit_limit = belfry::kChangePage.default_limit;
  auto* list = jobs->add_subcommand("list", "List jobs, by id, with keyset pagination");
  list->add_option("--owner", owner, "Only this owner");
  list->add_option("--topic", topic, "Only this output topic");
  std::string id_prefix;
  list->add_option("--id-prefix", id_prefix, "Only ids that start with this");
  std::vector<std::string> labels;
  list->add_option("--label", labels, "Only jobs with this label (key=value; repeat for all of several)");
  list->add_option("--limit", list_limit, SizeHelp("Page size", belfry::kJobListPage))
      ->check(CLI::Range(1, belfry::kJobListPage.max_limit));
  list->add_option("--cursor", cursor, "Continue after this cursor (printed at the end of a page)");
  list->add_option("-o,--output", output, "table or json")->check(CLI::IsMember({"table", "json"}));
  auto* history = jobs->add_subcommand("history", "A job's execution outcomes, newest first, with keyset pagination");
  history->add_option("id", op_id, "Job id")->required();
  history->add_option("--limit", history_limit, SizeHelp("Page size", belfry::kExecutionPage))
      ->check(CLI::Range(1, belfry::kExecutionPage.max_limit));
  history->add_option("--cursor", cursor, "Continue after this cursor (printed at the end of a page)");
  history->add_option("-o,--output", output, "table or json")->check(CLI::IsMember({"table", "json"}));
  auto* audit = jobs->add_subcommand("audit", "A job's change history (the audit trail), newest first, with keyset pagination");
  audit->add_option("id", op_id, "Job id")->required();
  audit->add_option("--limit", audit_limit, SizeHelp("Page size", belfry::kChangePage))
      ->check(CLI::Range(1, belfry::kChangePage.max_limit));
  int64_t audit_cursor = 0;
  audit->add_option("--cursor", audit_cursor, "Continue after this cursor (printed at the end of a page)")
      ->check(CLI::PositiveNumber);
  audit->add_option("-o,--output", output, "table or json (the change events, as GET /v1/jobs/{id}/changes)")
      ->check(CLI::IsMember({"table", "json"}));
  int n = belfry::kNextFiresList.default_limit;
  auto* next = jobs->add_subcommand("next", "The next trigger instants of a job");
  next->add_option("id", op_id, "Job id")->required();
  next->add_option("-n", n, SizeHelp("How many", belfry::kNextFiresList))
      ->check(CLI::Range(1, belfry::kNextFiresList.max_limit));
  next->add_flag("--json", json, "JSON output (as GET /v1/jobs/{id}/next?n=)");

  auto* bulk = app.add_subcommand("bulk", "Pause, resume, delete or trigger every job matching an owner and/or labels");
  bulk->require_subcommand(1);
  belfry::BulkArgs bulk_args;
  std::vector<CLI::App*> bulk_ops;
  for (const char* op : {"pause", "resume", "delete", "trigger"}) {
    auto* sub = bulk->add_subcommand(op, std::string("Bulk ") + op + " of every job the selector matches");
    sub->add_option("--owner", bulk_args.owner, "Jobs of this owner");
    sub->add_option("--label", bulk_args.labels, "Jobs with this label (key=value; repeat for all of several)");
    sub->add_option("--id", bulk_args.id, "Names the operation (default: generated); one id per operation");
    sub->add_option("--reason", bulk_args.reason, "Why (a pause stores it on each job it pauses)");
    sub->add_option("--actor", bulk_args.actor, "Who");
    sub->add_flag("--dry-run", bulk_args.dry_run, "Count the matching jobs; change nothing");
    add_wait(sub);
    bulk_ops.push_back(sub);
  }
  auto* bulk_get = bulk->add_subcommand("get", "A bulk operation and its progress, as JSON");
  bulk_get->add_option("id", op_id, "Bulk operation id")->required();
  int bulk_limit = belfry::kBulkOpPage.default_limit;
  auto* bulk_list = bulk->add_subcommand("list", "The most recent bulk operations");
  bulk_list->add_option("--limit", bulk_limit, SizeHelp("How many", belfry::kBulkOpPage))
      ->check(CLI::Range(1, belfry::kBulkOpPage.max_limit));

  auto* shards = app.add_subcommand("shards", "Per-shard progress: fired-through minute, claim, lag");
  shards->add_flag("--json", json, "JSON output");
  std::string load_from, load_to, load_by;
  int load_top = belfry::kLoadBreakdownTop.default_limit;
  bool load_shards = false;
  auto* load = app.add_subcommand(
      "load", "Project the triggers per shard-minute of a window from the stored schedules (fires nothing)");
  load->add_option("--from", load_from, "Window start, ISO-8601, rounded down to its minute (default: the next minute)");
  load->add_option("--to", load_to, "Window end, exclusive, rounded up (default: from + 60m; at most 1 day)");
  load->add_option("--by", load_by, "Break the total down by owner, topic or label:KEY (the value of a label)");
  load->add_option("--top", load_top, SizeHelp("How many owners or topics to list", belfry::kLoadBreakdownTop))
      ->check(CLI::Range(1, belfry::kLoadBreakdownTop.max_limit));
  load->add_flag("--shards", load_shards, "With --json: each minute's per-shard counts");
  load->add_flag("--json", json, "JSON output (as GET /v1/load)");
  bool dry_run = false;
  int rebalance_ids = 5;
  auto* rebalance = app.add_subcommand(
      "rebalance", "Propose new offsets for interval jobs that flatten the busiest minute (a dry run: changes nothing)");
  rebalance->add_flag("--dry-run", dry_run, "Required: the proposal only (applying is up to you, with upserts)")
      ->required();
  rebalance->add_option("--ids", rebalance_ids, "Example job ids per proposed move (0..100)")->check(CLI::Range(0, 100));
  rebalance->add_flag("--json", json, "JSON output (as GET /v1/load/rebalance)");
  int shard = 0;
  std::string at;
  auto* explain = app.add_subcommand("explain", "EXPLAIN ANALYZE the tick query for a shard and minute");
  explain->add_option("--shard", shard, "Shard")->required()->check(CLI::NonNegativeNumber);
  explain->add_option("--at", at, "A time inside the minute (ISO-8601; default: now)");
  std::string token_actor, token_ttl = "8h";
  auto* token = app.add_subcommand(
      "token", "Mint a write token for POST /v1/commands and the console (signed with admin.write_token_secret)");
  token->add_option("--actor", token_actor, "Who the token's commands are made by, in the audit trail")->required();
  token->add_option("--ttl", token_ttl, "How long it is valid (default 8h)");
  std::vector<std::string> watch_topics;
  bool from_beginning = false;
  auto* watch = app.add_subcommand("watch", "Print triggers arriving on topics, with their lateness");
  watch->add_option("--topic", watch_topics, "Topic to watch (repeatable)")->required();
  watch->add_flag("--from-beginning", from_beginning, "Start at the oldest message");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (version->parsed()) {
    std::printf("belfry %s\n", belfry::kBelfryVersion);
    return 0;
  }
  auto cfg_or = belfry::LoadConfig(config_path, belfry::ProcessEnv());
  if (!cfg_or.ok()) {
    std::fprintf(stderr, "belfry: %s\n", cfg_or.status().message().c_str());
    return 78;  // EX_CONFIG
  }
  const belfry::Config& cfg = *cfg_or;
  belfry::LogConfig log = cfg.log;
  if (!serve->parsed() && log.level == "info") log.level = "warn";  // keep CLI output clean
  belfry::SetUpLogging(log);
  wait_args.timeout_ms = DurationOrDie(timeout_text, "--timeout");

  if (serve->parsed()) return belfry::RunServe(cfg);
  if (migrate->parsed()) return belfry::RunMigrate(cfg, !skip_topics);
  if (reshard->parsed()) {
    reshard_args.lead_ms = DurationOrDie(reshard_lead, "--lead");
    return belfry::RunReshard(cfg, reshard_args);
  }
  if (put->parsed()) return belfry::RunJobsPut(cfg, put_args, wait_args);
  if (del->parsed()) return belfry::RunJobsOp(cfg, "delete", op_id, tombstone, wait_args);
  if (pause->parsed()) return belfry::RunJobsOp(cfg, "pause", op_id, false, wait_args, pause_reason, pause_actor);
  if (resume->parsed()) return belfry::RunJobsOp(cfg, "resume", op_id, false, wait_args);
  if (trigger->parsed()) return belfry::RunJobsOp(cfg, "trigger", op_id, false, wait_args);
  if (backfill->parsed()) return belfry::RunJobsBackfill(cfg, op_id, backfill_args, wait_args);
  for (CLI::App* sub : bulk_ops) {
    if (!sub->parsed()) continue;
    bulk_args.op = sub->get_name();
    // A walk over millions of jobs takes minutes: wait longer unless told otherwise.
    if (sub->count("--timeout") == 0) wait_args.timeout_ms = 10 * 60 * 1000;
    return belfry::RunBulk(cfg, bulk_args, wait_args);
  }
  if (bulk_get->parsed()) return belfry::RunBulkGet(cfg, op_id);
  if (bulk_list->parsed()) return belfry::RunBulkList(cfg, bulk_limit);
  if (get->parsed()) return belfry::RunJobsGet(cfg, op_id, json);
  if (history->parsed()) return belfry::RunJobsHistory(cfg, op_id, history_limit, cursor, output);
  if (audit->parsed()) return belfry::RunJobsAudit(cfg, op_id, audit_limit, audit_cursor, output);
  if (list->parsed()) return belfry::RunJobsList(cfg, owner, topic, labels, id_prefix, list_limit, cursor, output);
  if (next->parsed()) return belfry::RunJobsNext(cfg, op_id, n, json);
  if (shards->parsed()) return belfry::RunShards(cfg, json);
  if (load->parsed()) return belfry::RunLoad(cfg, load_from, load_to, load_by, load_top, load_shards, json);
  if (rebalance->parsed()) return belfry::RunRebalance(cfg, rebalance_ids, json);
  if (explain->parsed()) return belfry::RunExplain(cfg, shard, at);
  if (watch->parsed()) return belfry::RunWatch(cfg, watch_topics, from_beginning);
  if (token->parsed()) {
    const int64_t ttl_ms = DurationOrDie(token_ttl, "--ttl");
    if (ttl_ms <= 0) {
      std::fprintf(stderr, "belfry: --ttl must be positive\n");
      return 64;
    }
    return belfry::RunToken(cfg, token_actor, ttl_ms);
  }
  return 64;
}
