// `belfry bulk pause|resume|delete|trigger` (a bulk command published to Kafka) and
// `belfry bulk get|list` (the stored operations and their progress), docs/bulk-operations.md.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "app/system_clock.h"
#include "core/bulk_op_json.h"
#include "core/bulk_selector.h"
#include "pg/pg_job_store.h"

namespace belfry {

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

}  // namespace belfry
