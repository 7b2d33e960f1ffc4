// cron_fires_dump: prints the UTC minutes at which cron jobs fire, as belfry computes them, for
// the differential test against the independent oracle in tests/oracle/ (see its README).
//
//   cron_fires_dump --mode next|tick --windows A:B[,C:D...] [--list]
//   stdin:  one job per line, "<zone>\t<cron expression>"
//   stdout: one line per job, in order: "<count>\t<fnv1a64>[\t<m1>,<m2>,...]", or
//           "error\t<reason>: <message>" when belfry rejects the job.
// A and B are UTC epoch minutes, each window half-open [A, B). The hash is FNV-1a 64 over each
// fire minute's decimal text followed by "\n", in ascending order.
//
// --mode next: NextCalendarFires, the computation behind `belfry jobs next` and the previews.
// --mode tick: the real tick query. The jobs are planned as a command would plan them (a fixed
//   UTC interval becomes an interval job) and stored through PgJobStore in a throwaway database on
//   $BELFRY_DATABASE_URL's server; then every minute of the windows is queried as a ticker would
//   (the interval terms of the default intervals, and the stream's calendar terms).
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "belfry/config.h"
#include "core/calendar_schedule.h"
#include "core/cron_expression.h"
#include "core/slot_math.h"
#include "pg/pg_job_store.h"
#include "pg/pg_test_database.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

struct Window {
  int64_t from = 0;
  int64_t to = 0;
};

struct Job {
  std::string error;  // non-empty: rejected
  CronExpression cron;
  const TimeZone* zone = nullptr;
  JobSpec spec;
  std::vector<int64_t> fires;
};

uint64_t Fnv1a(const std::vector<int64_t>& minutes) {
  uint64_t h = 14695981039346656037ULL;
  for (int64_t m : minutes) {
    const std::string text = std::to_string(m) + "\n";
    for (unsigned char c : text) {
      h ^= c;
      h *= 1099511628211ULL;
    }
  }
  return h;
}

bool ParseWindows(const std::string& text, std::vector<Window>* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string w = text.substr(pos, end - pos);
    const size_t colon = w.find(':');
    if (colon == std::string::npos) return false;
    out->push_back(Window{std::stoll(w.substr(0, colon)), std::stoll(w.substr(colon + 1))});
    pos = end + 1;
  }
  return !out->empty();
}

int RunTick(std::vector<Job>& jobs, const std::vector<Window>& windows) {
  std::string error;
  std::unique_ptr<PgTestDatabase> db = PgTestDatabase::CreateMigrated(120, &error);
  if (!db) {
    std::fprintf(stderr, "cron_fires_dump: %s\n", error.c_str());
    return 2;
  }
  PgJobStore store(db->url());
  std::vector<JobAction> actions;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].error.empty()) continue;
    JobAction a;
    a.kind = JobAction::Kind::kUpsert;
    a.id = jobs[i].spec.id;
    a.spec = jobs[i].spec;
    a.source = SourcePosition{0, static_cast<int64_t>(i), 0};
    actions.push_back(std::move(a));
    index[jobs[i].spec.id] = i;
  }
  if (Status st = store.ApplyActions(actions); !st.ok()) {
    std::fprintf(stderr, "cron_fires_dump: storing the jobs: %s\n", st.ToString().c_str());
    return 2;
  }
  const SchedulerConfig cfg;
  for (const Window& w : windows) {
    for (int64_t m = w.from; m < w.to; ++m) {
      DueQuery q{0, m, m, cfg.tick_ms, TermsForMinute(cfg.intervals, m)};
      Status st = store.ForEachDueJob(
          q, [&](const DueJob& due) { jobs[index.at(std::string(due.id))].fires.push_back(m); });
      if (!st.ok()) {
        std::fprintf(stderr, "cron_fires_dump: tick query for minute %" PRId64 ": %s\n", m,
                     st.ToString().c_str());
        return 2;
      }
    }
  }
  return 0;
}

int Main(int argc, char** argv) {
  std::string mode = "next";
  std::vector<Window> windows;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mode" && i + 1 < argc) {
      mode = argv[++i];
    } else if (arg == "--windows" && i + 1 < argc) {
      if (!ParseWindows(argv[++i], &windows)) {
        std::fprintf(stderr, "cron_fires_dump: --windows wants A:B[,C:D...]\n");
        return 2;
      }
    } else if (arg == "--list") {
      list = true;
    } else {
      std::fprintf(stderr, "usage: cron_fires_dump --mode next|tick --windows A:B[,C:D...] [--list]\n");
      return 2;
    }
  }
  if (windows.empty() || (mode != "next" && mode != "tick")) {
    std::fprintf(stderr, "usage: cron_fires_dump --mode next|tick --windows A:B[,C:D...] [--list]\n");
    return 2;
  }
  const SchedulerConfig cfg;
  std::vector<Job> jobs;
  std::string line;
  while (std::getline(std::cin, line)) {
    Job& job = jobs.emplace_back();
    const size_t tab = line.find('\t');
    const std::string zone = tab == std::string::npos ? std::string() : line.substr(0, tab);
    const std::string expr = tab == std::string::npos ? line : line.substr(tab + 1);
    job.spec.id = "j" + std::to_string(jobs.size() - 1);
    job.spec.topic = "t";
    // Planned at the first window's start, as a command produced then would be.
    if (Status st = PlanCalendarJob(SystemTimeZones(), expr, zone, windows.front().from * kMsPerMinute,
                                    cfg.intervals, &job.spec);
        !st.ok()) {
      job.error = st.ToString();
      continue;
    }
    job.cron = *ParseCronExpression(expr);
    job.zone = *LocateTimeZone(SystemTimeZones(), zone);
  }
  if (mode == "next") {
    for (Job& job : jobs) {
      if (!job.error.empty()) continue;
      for (const Window& w : windows) {
        for (const CalendarFire& f : NextCalendarFires(job.cron, job.zone, w.from - 1, INT32_MAX, w.to)) {
          job.fires.push_back(f.utc_minute);
        }
      }
    }
  } else if (int rc = RunTick(jobs, windows); rc != 0) {
    return rc;
  }
  for (const Job& job : jobs) {
    if (!job.error.empty()) {
      std::printf("error\t%s\n", job.error.c_str());
      continue;
    }
    std::printf("%zu\t%016" PRIx64, job.fires.size(), Fnv1a(job.fires));
    if (list) {
      std::printf("\t");
      for (size_t i = 0; i < job.fires.size(); ++i) std::printf(i ? ",%" PRId64 : "%" PRId64, job.fires[i]);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace belfry

int main(int argc, char** argv) { return belfry::Main(argc, argv); }
