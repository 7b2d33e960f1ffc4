// Every SQL statement belfry sends, captured as PostgreSQL received it (pg_stat_statements) while
// the real stores drive the trigger path, the command path, execution reports and the cluster-wide
// work, and classified by its plan: would Citus, distributing the tables by `shard`, route it to a
// single node? (docs/scale-out.md.) A statement on the trigger or command paths must reach one
// shard, or be in the catalog (statement_catalog.cc) as allowed or as a known gap, with the reason.
// A statement the catalog does not know fails the test, and so does one whose plan no longer shows
// the routing the catalog records.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "belfry/config.h"
#include "core/calendar_schedule.h"
#include "core/fire_limit.h"
#include "core/iso_time.h"
#include "core/shard_hash.h"
#include "core/slot_math.h"
#include "fakes/fake_clock.h"
#include "migrated_database_test.h"
#include "pg/migrator.h"
#include "pg/pg_execution_store.h"
#include "pg/pg_job_store.h"
#include "pg/pg_shard_ledger.h"
#include "statement_capture.h"
#include "statement_catalog.h"
#include "statement_classifier.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

using F = CatalogFixture;
const SchedulerConfig kCfg;

// Gives the distributed tables the shape of a populated database before the classifier plans:
// 500 jobs and 20 calendar slots per shard, analyzed. On nearly empty partitions the planner
// would rather scan every partition once than probe each batch row's own, which says nothing
// about the statement; at scale it probes (docs/storage.md, "Partitions"), and so it does here.
void PopulateForPlanning(PgTestDatabase& db) {
  db.Exec(
      "INSERT INTO jobs (id, shard, interval_minutes, offset_minutes, topic, src_partition, src_offset)"
      " SELECT 'plan-' || g, g % 120, 5, g % 5, 't', 0, 0 FROM generate_series(0, 59999) AS g");
  db.Exec(
      "INSERT INTO cron_slots (shard, key, job_id, hour_mask, dom_mask, month_mask, dow_mask, day_or)"
      " SELECT g % 120, 2048 + g % 60, 'plan-' || g, 1, 2, 2, 1, false FROM generate_series(0, 2399) AS g");
  db.Exec("ANALYZE jobs; ANALYZE cron_slots; ANALYZE shard_state");
}

class StatementRoutingTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    static bool modeled = false;  // one database per suite
    if (!modeled) {
      // Today shard_state and cron_slots; jobs is partitioned by migration 0005.
      pqxx::connection conn(db().url());
      ModelShardsAsPartitions(conn, F::kShardCount);
      modeled = true;
    }
    fixture_.job = IdInShard("route-job", F::kShard);
    fixture_.cron_job = IdInShard("route-cron", F::kShard);
    fixture_.intervals = kCfg.intervals;
  }

  F fixture_;
};

// The negative control: the classifier, given statements that do not name their shard, says so.
TEST_F(StatementRoutingTest, ClassifierRejectsStatementsThatDoNotNameTheirShard) {
  PopulateForPlanning(db());
  StatementClassifier classifier(db().url(), StagingTables());
  const std::string s = std::to_string(F::kShard);
  struct Case {
    const char* sql;
    std::vector<std::optional<std::string>> params;
    Routing expected;
  } cases[] = {
      // The tick query without its shard: every partition of jobs.
      {"SELECT id FROM jobs WHERE phase = ANY ($1::bigint[]) AND NOT paused",
       {"{1441,2880}"},
       Routing::kAllShards},
      // ... and with it: one.
      {"SELECT id FROM jobs WHERE shard = $1::smallint AND phase = ANY ($2::bigint[]) AND NOT paused",
       {s, "{1441,2880}"},
       Routing::kOneShard},
      // A claim that forgot its shard.
      {"UPDATE shard_state SET claim_node = NULL WHERE claim_node = $1", {"node-a"}, Routing::kAllShards},
      // kDeleteJobsSql without `j.shard = a.shard`: each row probes every partition.
      {"DELETE FROM jobs AS j USING json_to_recordset($1::json) AS a(id text, shard smallint) WHERE j.id = "
       "a.id",
       {R"([{"id":"x","shard":)" + s + "}]"},
       Routing::kAllShards},
      // ... and with it: each row its own partition, at run time only.
      {"DELETE FROM jobs AS j USING json_to_recordset($1::json) AS a(id text, shard smallint)"
       " WHERE j.shard = a.shard AND j.id = a.id",
       {R"([{"id":"x","shard":)" + s + "}]"},
       Routing::kShardPerRow},
      // A row of a table without a shard column.
      {"SELECT * FROM job_stats WHERE job_id = $1", {"x"}, Routing::kNoShardColumn},
  };
  for (const Case& c : cases) {
    const Classification got = classifier.Classify(StatementSample{c.sql, c.params, {F::kShard}, {}});
    EXPECT_EQ(got.error, "") << c.sql;
    std::string tables;
    for (const auto& [t, r] : got.tables) tables += " " + t + ": " + r;
    EXPECT_EQ(RoutingName(got.routing), std::string(RoutingName(c.expected))) << c.sql << "\n" << tables;
  }
  // A statement the catalog does not know is not matched by any entry.
  const std::vector<CatalogEntry> catalog = BelfryStatements(fixture_);
  const std::string unknown = NormalizeStatement(cases[0].sql);
  EXPECT_TRUE(std::none_of(catalog.begin(), catalog.end(),
                           [&](const CatalogEntry& e) { return Matches(e, unknown); }));
}

// ---- The driver: the real stores, as the capture's role. ----------------------------------------

JobAction Upsert(const std::string& id, int32_t interval, int32_t offset, int64_t src_offset) {
  JobAction a;
  a.id = a.spec.id = id;
  a.spec.interval_minutes = interval;
  a.spec.offset_minutes = offset;
  a.spec.offset_explicit = true;
  a.spec.shard = ShardForId(id, F::kShardCount);
  a.spec.topic = "t";
  a.spec.owner = "route";
  a.spec.details_json = "{}";
  a.source = SourcePosition{0, src_offset, F::kMinute * 60'000};
  return a;
}

JobAction SetPaused(const std::string& id, bool paused, int64_t src_offset) {
  JobAction a;
  a.kind = JobAction::Kind::kSetPaused;
  a.id = id;
  a.paused = paused;
  a.source = SourcePosition{0, src_offset, F::kMinute * 60'000 + 1000};
  return a;
}

JobAction Delete(const std::string& id, int64_t src_offset) {
  JobAction a;
  a.kind = JobAction::Kind::kDelete;
  a.id = id;
  a.source = SourcePosition{0, src_offset, F::kMinute * 60'000};
  return a;
}

ManualFire Fire(ManualFire::Kind kind, const std::string& id, int64_t src_offset) {
  ManualFire f;
  f.kind = kind;
  f.id = id;
  f.source = SourcePosition{1, src_offset, F::kMinute * 60'000 + 100};
  return f;
}

#define EXPECT_OK(expr)                    \
  do {                                     \
    const auto& belfry_st_ = (expr);       \
    EXPECT_TRUE(belfry_st_.ok()) << #expr; \
  } while (0)

TEST_F(StatementRoutingTest, EveryStatementOnTheTriggerAndCommandPathsNamesItsShard) {
  const auto started = std::chrono::steady_clock::now();
  std::string error;
  std::unique_ptr<StatementCapture> capture = StatementCapture::Create(db().url(), &error);
  ASSERT_NE(capture, nullptr) << error;

  std::map<std::string, std::set<Phase>> captured_in;  // normalized text -> phases
  std::map<std::string, std::string> texts;            // normalized text -> as captured
  std::map<std::string, int64_t> calls;
  bool evicted = false;
  auto segment = [&](Phase phase, const std::function<void()>& drive) {
    const int64_t dealloc = capture->Deallocations();
    capture->Reset();
    drive();
    for (const StatementCapture::Statement& st : capture->Read()) {
      const std::string n = NormalizeStatement(st.query);
      captured_in[n].insert(phase);
      texts.emplace(n, st.query);
      calls[n] += st.calls;
    }
    evicted |= capture->Deallocations() != dealloc;
  };

  const F& f = fixture_;
  FakeClock clock(F::kMinute * 60'000 + 20'000);
  {
    PgJobStore jobs(capture->role_url());
    PgShardLedger ledger(capture->role_url());
    RetryRules rules;
    rules.layout = ShardLayout{static_cast<int32_t>(60'000 / F::kTickMs)};
    PgExecutionStore executions(capture->role_url(), rules, clock);

    const std::string high = IdInShard("route-high", F::kShard);
    const std::string low = IdInShard("route-low", F::kShard);
    const std::string once = IdInShard("route-once", F::kShard);
    const std::string limited = IdInShard("route-limited", F::kShard);
    const std::string doomed = IdInShard("route-doomed", F::kOtherShard);

    // Commands: new jobs of every kind but calendar ones (the tick below runs without cron zones).
    segment(Phase::kCommand, [&] {
      std::vector<JobAction> batch;
      JobAction job = Upsert(f.job, 5, 1, 10);
      job.spec.max_retries = 3;
      batch.push_back(job);
      JobAction h = Upsert(high, 1, 0, 11);
      h.spec.priority = 5;
      batch.push_back(h);
      JobAction l = Upsert(low, 1, 0, 12);
      l.spec.priority = -5;
      batch.push_back(l);
      JobAction o = Upsert(once, 0, 0, 13);
      o.spec.offset_explicit = false;
      o.spec.run_at = (F::kMinute + 1) * 60'000 + 1234;
      o.spec.run_minute = F::kMinute + 1;
      o.spec.scheduled_for_ms = SlotMs(F::kMinute + 1, F::kShard, F::kTickMs);
      o.spec.late_limit_minute = F::kMinute + 15;
      batch.push_back(o);
      JobAction lim = Upsert(limited, 1, 0, 14);
      lim.spec.max_fires = 100;
      lim.spec.fires_from_ms = F::kMinute * 60'000;
      ApplyFireLimit(SystemTimeZones(), &lim.spec, F::kTickMs);
      batch.push_back(lim);
      batch.push_back(Upsert(doomed, 15, 3, 15));
      for (int i = 0; i < 20; ++i) {
        JobAction b = Upsert("route-bulk-" + std::to_string(i), 10, i % 10, 20 + i);
        b.spec.owner = "route-owner";
        b.spec.labels_json = R"({"team":"route"})";
        batch.push_back(b);
      }
      EXPECT_OK(jobs.ApplyActions(batch));
    });

    DueQuery minute;
    minute.shard = F::kShard;
    minute.first_minute = minute.last_minute = F::kMinute;
    minute.tick_ms = F::kTickMs;
    minute.terms = TermsForMinute(f.intervals, F::kMinute);
    DueQuery range = minute;
    range.first_minute = F::kMinute - 5;
    range.terms = TermsForRange(f.intervals, range.first_minute, F::kMinute);
    auto tick = [&] {
      size_t rows = 0;
      EXPECT_OK(jobs.ForEachDueJob(minute, [&](const DueJob&) { ++rows; }));
      EXPECT_OK(jobs.ForEachDueJob(range, [&](const DueJob&) { ++rows; }));
      EXPECT_GT(rows, 0u);
    };

    // The trigger path: claim, the shard-minute's three statements, the coalesced range, the
    // watermark with debt, a debt firing, a release.
    segment(Phase::kTrigger, [&] {
      StatusOr<ShardClaim> claim = ledger.Claim(F::kShard, F::kMinute, "node-a", 3000);
      EXPECT_TRUE(claim.ok() && claim->claimed);
      tick();
      EXPECT_OK(ledger.MarkFired(F::kShard, F::kMinute, "node-a", 3000, false));
      EXPECT_OK(ledger.Advance(F::kShard, F::kMinute, MinuteRange{F::kMinute - 3, F::kMinute - 2}, "node-a"));
      StatusOr<DebtClaim> debt = ledger.ClaimDebt(F::kShard, "node-a", 3000);
      EXPECT_TRUE(debt.ok() && debt->claimed);
      EXPECT_OK(ledger.RenewDebt(F::kShard, "node-a", 3000));
      EXPECT_OK(ledger.SettleDebt(F::kShard, MinuteRange{F::kMinute - 3, F::kMinute - 3}, "node-a"));
      EXPECT_OK(ledger.ReleaseDebt(F::kShard, "node-a"));
      EXPECT_OK(ledger.Claim(F::kShard, F::kMinute + 1, "node-a", 3000));
      EXPECT_OK(ledger.Release(F::kShard, "node-a"));
      EXPECT_OK(ledger.LoadStates());  // the catch-up scan
    });

    // Commands: a calendar job, an update, pause and resume of a limited job, a delete, manual
    // fires (of a job, of a missing one, a backfill), bulk operations.
    segment(Phase::kCommand, [&] {
      JobAction cron = Upsert(f.cron_job, 0, 0, 40);
      cron.spec.offset_explicit = false;
      const Status planned = PlanCalendarJob(SystemTimeZones(), "0 9 * * MON-FRI", "Europe/Berlin",
                                             F::kMinute * 60'000, f.intervals, &cron.spec);
      EXPECT_TRUE(planned.ok() && cron.spec.calendar_slots()) << planned.ToString();
      fixture_.cron_src_offset = 40;
      JobAction again = Upsert(f.job, 5, 1, 41);
      again.spec.max_retries = 3;
      again.spec.details_json = R"({"v":2})";
      EXPECT_OK(jobs.ApplyActions({cron, again, SetPaused(limited, true, 42), Delete(doomed, 43)}));
      EXPECT_OK(jobs.ApplyActions({SetPaused(limited, false, 44)}));
      ManualFire backfill = Fire(ManualFire::Kind::kBackfill, f.job, 2);
      backfill.backfill.from_ms = (F::kMinute - 60) * 60'000;
      backfill.backfill.to_ms = F::kMinute * 60'000;
      backfill.backfill.rate_per_minute = 60;
      StatusOr<std::vector<ManualFireResult>> fired =
          jobs.ApplyManualFires({Fire(ManualFire::Kind::kTrigger, f.job, 1), backfill,
                                 Fire(ManualFire::Kind::kTrigger, "route-missing", 3)});
      EXPECT_TRUE(fired.ok()) << fired.status().ToString();
      BulkOp pause;
      pause.id = "route-bulk-pause";
      pause.op = CommandOp::kPause;
      pause.selector.owner = "route-owner";
      pause.source = SourcePosition{2, 1, F::kMinute * 60'000};
      BulkOp count = pause;
      count.id = "route-bulk-count";
      count.dry_run = true;
      count.selector.owner.reset();
      count.selector.labels_json = R"({"team":"route"})";
      count.source.offset = 2;
      EXPECT_OK(jobs.AcceptBulkOps({pause, count}));
      EXPECT_OK(jobs.AcceptBulkOps({pause}));  // a replay: reads the recorded source
    });

    // The trigger path again, now with a calendar job's zone: the statements with cron_slots.
    segment(Phase::kTrigger, tick);

    // Execution reports: a failure schedules a retry, a success supersedes it.
    segment(Phase::kExecutions, [&] {
      const EpochMs slot = SlotMs(F::kMinute, F::kShard, F::kTickMs);
      ExecutionReport failed;
      failed.job_id = f.job;
      failed.scheduled_for_ms = slot;
      failed.status = ExecutionStatus::kFailed;
      failed.error = "HTTP 503";
      failed.finished_at = slot + 9'000;
      failed.source = SourcePosition{0, 1, slot + 9'000};
      EXPECT_OK(executions.ApplyReports({failed}));
      ExecutionReport ok = failed;
      ok.status = ExecutionStatus::kSucceeded;
      ok.error.clear();
      ok.attempt = 1;
      ok.source.offset = 2;
      EXPECT_OK(executions.ApplyReports({ok}));
    });

    // Cluster-wide: admin reads, listings, the load projection, sweeps, bulk walks, the audit
    // trail's publisher, the tzdata re-plan, the history, migrations.
    segment(Phase::kClusterWide, [&] {
      EXPECT_OK(jobs.GetJob(f.job));
      EXPECT_OK(jobs.GetJob("route-missing"));
      EXPECT_OK(jobs.GetJobAndStats(f.job));
      EXPECT_OK(jobs.GetJobAndStats(IdInShard("route-missing", F::kShard)));
      // Every listing's shape: all, by owner, by topic, by both, by labels.
      for (const auto& [owner, topic, labels] :
           std::vector<std::array<std::string, 3>>{{"", "", ""},
                                                   {"route-owner", "", ""},
                                                   {"", "t", ""},
                                                   {"route-owner", "t", ""},
                                                   {"", "", R"({"team":"route"})"}}) {
        JobListFilter filter;
        filter.owner = owner;
        filter.topic = topic;
        filter.labels = labels;
        EXPECT_OK(jobs.ListJobs(filter));
      }
      JobListFilter by_prefix;  // an id prefix (the console's search): a range of the index here
      by_prefix.id_prefix = "route";
      EXPECT_OK(jobs.ListJobs(by_prefix));
      EXPECT_OK(jobs.CountJobs());
      EXPECT_OK(jobs.ExplainDueQuery(minute));
      for (const char* by : {"", "owner"}) {
        LoadGroupQuery load;
        load.first_minute = F::kMinute;
        load.last_minute = F::kMinute + 59;
        load.by = by;
        EXPECT_OK(jobs.ReadLoadGroups(load));
      }
      EXPECT_OK(jobs.ReadOffsetLoads());
      EXPECT_OK(jobs.MovableJobIds(10, 1, 5));
      EXPECT_OK(jobs.SweepOneShots(F::kMinute - 1440, 1000));
      for (int step = 0; step < 100; ++step) {
        StatusOr<std::optional<BulkOpState>> s = jobs.RunBulkStep(1000, F::kMinute * 60'000 + 5'000);
        EXPECT_TRUE(s.ok());
        if (!s.ok() || !s->has_value()) break;
      }
      EXPECT_OK(jobs.UnpublishedBulkOps(10));
      EXPECT_OK(jobs.MarkBulkOpPublished("route-bulk-pause", F::kMinute * 60'000 + 6'000));
      EXPECT_OK(jobs.GetBulkOp("route-bulk-pause"));
      EXPECT_OK(jobs.ListBulkOps(10));
      EXPECT_OK(jobs.ListJobChanges(f.job, 0, 50));
      EXPECT_OK(jobs.PublishChanges(100, [](const std::vector<JobChange>&) { return Status::Ok(); }));
      EXPECT_OK(jobs.SweepJobChanges(F::kMinute * 60'000, 1000));
      EXPECT_OK(jobs.ReplanCalendarJobs("route-tzdata", F::kMinute * 60'000, f.intervals));
      ManualFire count = Fire(ManualFire::Kind::kBackfill, f.job, 9);
      count.backfill.from_ms = (F::kMinute - 60) * 60'000;
      count.backfill.to_ms = F::kMinute * 60'000;
      count.backfill.rate_per_minute = 60;
      EXPECT_OK(jobs.CountBackfill(count));
      EXPECT_OK(executions.ListExecutions(f.job, 50, ""));
      EXPECT_OK(executions.ListExecutions(
          f.job, 50, std::to_string(SlotMs(F::kMinute, F::kShard, F::kTickMs)) + ".0.failed"));
      EXPECT_OK(executions.GetJobStats(f.job));
      EXPECT_OK(executions.MaintainPartitions(7LL * 86'400'000, 3));
      EXPECT_OK(ledger.LoadStates());
      EXPECT_OK(Migrate(capture->role_url(), MigrationsDir(), F::kShardCount));
      EXPECT_OK(CheckSchema(capture->role_url(), MigrationsDir(), F::kShardCount));
    });
  }  // the stores disconnect: their role can be dropped

  // ---- Match every captured statement to the catalog, and classify every catalog entry. ----
  const std::vector<CatalogEntry> catalog = BelfryStatements(fixture_);
  std::map<size_t, std::set<Phase>> entry_phases;
  std::map<size_t, int64_t> entry_calls;
  for (const auto& [normalized, phases] : captured_in) {
    std::vector<size_t> matched;
    for (size_t i = 0; i < catalog.size(); ++i) {
      if (Matches(catalog[i], normalized)) matched.push_back(i);
    }
    std::string where;
    for (Phase p : phases) where += std::string(where.empty() ? "" : ", ") + PhaseName(p);
    // pg_stat_statements keeps statements that differ only in constants as one (the to_regclass
    // checks, the belfry_meta reads): each entry they could be is credited, if they agree.
    const bool agree = std::all_of(matched.begin(), matched.end(), [&](size_t i) {
      return catalog[i].expected == catalog[matched[0]].expected && catalog[i].use == catalog[matched[0]].use;
    });
    if (matched.empty() || !agree) {
      ADD_FAILURE() << (matched.empty() ? "a statement the catalog does not know"
                                        : "entries that disagree match")
                    << " (sent on the " << where
                    << " path; add it to tests/pg/statement_catalog.cc with its routing,"
                    << " or route it by shard):\n  " << texts[normalized];
      continue;
    }
    for (size_t i : matched) {
      entry_phases[i].insert(phases.begin(), phases.end());
      entry_calls[i] += calls[normalized];
    }
  }

  PopulateForPlanning(db());
  StatementClassifier classifier(db().url(), StagingTables());
  std::printf("\n%-13s %-32s %-16s %-9s %5s  tables\n", "path", "statement", "routing", "use", "calls");
  for (size_t i = 0; i < catalog.size(); ++i) {
    const CatalogEntry& e = catalog[i];
    SCOPED_TRACE(e.name);
    // The catalog's own rule: what is not routed to one node says why.
    const bool one_node =
        e.expected == Routing::kNoTable || e.expected == Routing::kLocal || e.expected == Routing::kOneShard;
    EXPECT_TRUE(e.use != Use::kRouted || one_node) << "a routed entry reaches one node";
    EXPECT_EQ(e.reason.empty(), e.use == Use::kRouted)
        << "allowed statements and known gaps give their reason";
    const std::set<Phase>& seen = entry_phases[i];
    for (Phase p : e.phases) {
      if (seen.count(p) == 0) {
        if (evicted) {
          std::printf(
              "warning: %s not captured on the %s path, but pg_stat_statements evicted entries meanwhile\n",
              e.name.c_str(), PhaseName(p));
        } else {
          ADD_FAILURE() << "the driver no longer sends it on the " << PhaseName(p) << " path";
        }
      }
    }
    const Classification got = classifier.Classify(e.sample);
    EXPECT_EQ(got.error, "") << e.sample.sql;
    EXPECT_EQ(std::string(RoutingName(got.routing)), RoutingName(e.expected)) << e.sample.sql;
    std::string tables;
    for (const auto& [t, r] : got.tables) tables += (tables.empty() ? "" : "; ") + t + ": " + r;
    std::string where;
    for (Phase p : seen) where += std::string(where.empty() ? "" : ",") + PhaseName(p);
    std::printf("%-13s %-32s %-16s %-9s %5lld  %s\n", where.empty() ? "-" : where.c_str(), e.name.c_str(),
                RoutingName(got.routing), UseName(e.use), static_cast<long long>(entry_calls[i]),
                tables.c_str());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%zu distinct statements captured, %zu catalog entries classified, %.1f s\n",
              captured_in.size(), catalog.size(), seconds);
}

}  // namespace
}  // namespace belfry
