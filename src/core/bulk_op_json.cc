#include "core/bulk_op_json.h"

#include <fmt/format.h>

#include <iterator>

#include "belfry/command.h"
#include "core/bulk_selector.h"
#include "core/json_writer.h"

namespace belfry {
std::string EncodeBulkOpJson(const BulkOpState& s) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, s.op.id);
  out.append(",\"op\":");
  AppendJsonString(&out, CommandOpName(s.op.op));
  out.append(",\"selector\":").append(EncodeBulkSelector(s.op.selector));
  out.append(",\"reason\":");
  AppendJsonStringOrNull(&out, s.op.reason);
  out.append(",\"actor\":");
  AppendJsonStringOrNull(&out, s.op.actor);
  fmt::format_to(std::back_inserter(out),
                 ",\"dryRun\":{},\"state\":\"{}\",\"matched\":{},\"changed\":{},\"steps\":{},\"nextShard\":{},"
                 "\"afterId\":",
                 s.op.dry_run, s.finished_at ? "finished" : "running", s.matched, s.changed, s.steps, s.next_shard);
  AppendJsonString(&out, s.after_id);
  out.append(",\"commandAt\":");
  AppendJsonTimeOrNull(&out, s.op.source.timestamp_ms);
  out.append(",\"acceptedAt\":");
  AppendJsonTimeOrNull(&out, s.accepted_at);
  out.append(",\"finishedAt\":");
  AppendJsonTimeOrNull(&out, s.finished_at);
  out.append(",\"publishedAt\":");
  AppendJsonTimeOrNull(&out, s.published_at);
  fmt::format_to(std::back_inserter(out), ",\"source\":{{\"partition\":{},\"offset\":{}}}}}", s.op.source.partition,
                 s.op.source.offset);
  return out;
}

}  // namespace belfry
