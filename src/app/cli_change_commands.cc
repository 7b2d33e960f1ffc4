// `belfry jobs audit`: a job's audit trail (docs/audit-trail.md), newest first, a page at a time.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "core/iso_time.h"
#include "core/job_change.h"
#include "core/pagination.h"
#include "pg/pg_job_store.h"

namespace belfry {
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

}  // namespace belfry
