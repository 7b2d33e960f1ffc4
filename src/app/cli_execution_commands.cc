// `belfry jobs history`: a job's execution outcomes, newest first, a page at a time.
#include <cstdio>
#include <optional>
#include <string>

#include "app/app_support.h"
#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "app/system_clock.h"
#include "core/execution_report.h"
#include "core/iso_time.h"
#include "core/pagination.h"
#include "core/resource_views.h"
#include "pg/pg_execution_store.h"

namespace belfry {

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

}  // namespace belfry
