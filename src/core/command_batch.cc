#include "core/command_batch.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <unordered_map>

#include "core/bulk_selector.h"
#include "core/json_writer.h"

namespace belfry {
namespace {

// Folds `next` into the pending action for its id. The rules keep the result equal to applying
// the commands one at a time:
// - delete wins over whatever came before; a later upsert then re-creates the job fresh
//   (replace_fresh: paused=false, offset taken from the new command).
// - pause/resume after an upsert set the upsert's paused flag; after a delete they are no-ops
//   (the job does not exist); otherwise they become a kSetPaused action. A pause's note travels
//   with the flag (a later pause replaces it, a resume clears it, an upsert keeps it).
// - an upsert after an upsert replaces it; if the new one has no explicit offset and keeps the
//   previous interval it inherits the previous offset (and its explicitness), as it would from
//   the stored row; if it changes the interval its own offset is taken as decided.
void Fold(JobAction* pending, bool* has_pending, const Command& next) {
  const bool had = *has_pending;
  JobAction prev = had ? *pending : JobAction{};
  JobAction out;
  out.id = next.id;
  out.source = next.source;
  out.actor = next.actor;
  out.reason = next.reason;
  switch (next.op) {
    case CommandOp::kTrigger:
    case CommandOp::kBackfill:
      return;  // not job actions: ReduceCommands leaves them out
    case CommandOp::kDelete:
      out.kind = JobAction::Kind::kDelete;
      break;
    case CommandOp::kUpsert:
      out.kind = JobAction::Kind::kUpsert;
      out.spec = next.spec;
      if (had && prev.kind == JobAction::Kind::kDelete) {
        out.replace_fresh = true;
        out.paused = false;
        out.spec.offset_explicit = true;  // the stored row is gone: the decided offset stands
      } else if (had && prev.kind == JobAction::Kind::kUpsert) {
        out.replace_fresh = prev.replace_fresh;
        out.paused = prev.paused;
        out.pause_reason = prev.pause_reason;
        out.pause_actor = prev.pause_actor;
        if (!next.spec.offset_explicit) {
          if (prev.spec.interval_minutes == next.spec.interval_minutes) {
            out.spec.offset_minutes = prev.spec.offset_minutes;
            out.spec.offset_explicit = prev.spec.offset_explicit;
            out.spec.offset_pinned = prev.spec.offset_pinned;  // the offset it inherits, pin and all
          } else {
            out.spec.offset_explicit = true;  // interval changed within the batch
          }
        }
      } else if (had && prev.kind == JobAction::Kind::kSetPaused) {
        out.paused = prev.paused;
        out.pause_reason = prev.pause_reason;
        out.pause_actor = prev.pause_actor;
      }
      break;
    case CommandOp::kPause:
    case CommandOp::kResume: {
      const bool flag = next.op == CommandOp::kPause;
      if (had && prev.kind == JobAction::Kind::kDelete) {
        out = prev;  // pausing a deleted job does nothing
        out.source = next.source;
        out.actor = next.actor;
        out.reason = next.reason;
      } else if (had && prev.kind == JobAction::Kind::kUpsert) {
        out = prev;
        out.paused = flag;
        out.source = next.source;
        out.actor = next.actor;
        out.reason = next.reason;
      } else {
        out.kind = JobAction::Kind::kSetPaused;
        out.paused = flag;
      }
      if (out.kind != JobAction::Kind::kDelete) {  // a pause's note; a resume clears it
        out.pause_reason = flag ? next.reason : std::string();
        out.pause_actor = flag ? next.actor : std::string();
      }
      break;
    }
  }
  *pending = std::move(out);
  *has_pending = true;
}

bool IsUsableOutcomeKey(const std::string& key) {
  if (key.empty() || key.size() > 255) return false;
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return simdjson::validate_utf8(key.data(), key.size());
}

}  // namespace

std::vector<JobAction> ReduceCommands(const std::vector<Command>& commands) {
  std::vector<JobAction> actions;
  std::vector<bool> present;
  std::unordered_map<std::string, size_t> index;
  for (const Command& c : commands) {
    if (c.op == CommandOp::kTrigger || c.op == CommandOp::kBackfill || c.selector) continue;
    auto [it, inserted] = index.try_emplace(c.id, actions.size());
    if (inserted) {
      actions.emplace_back();
      present.push_back(false);
    }
    bool has = present[it->second];
    Fold(&actions[it->second], &has, c);
    present[it->second] = has;
  }
  return actions;
}

PreparedCommandBatch PrepareCommandBatch(const std::vector<RawCommand>& batch, const CommandRules& rules) {
  PreparedCommandBatch out;
  std::vector<Command> valid;
  valid.reserve(batch.size());
  out.outcomes.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const RawCommand& raw = batch[i];
    StatusOr<Command> parsed = ParseCommand(raw, rules);
    CommandOutcome outcome;
    outcome.partition = raw.source.partition;
    outcome.offset = raw.source.offset;
    if (parsed.ok()) {
      outcome.id = parsed->id;
      outcome.op = CommandOpName(parsed->op);
      outcome.applied = true;
      if (parsed->selector) {
        BulkOp& op = out.bulk.emplace_back();
        op.id = parsed->id;
        op.op = parsed->op;
        op.selector = std::move(*parsed->selector);
        op.reason = std::move(parsed->reason);
        op.actor = std::move(parsed->actor);
        op.dry_run = parsed->dry_run;
        op.source = parsed->source;
        out.bulk_outcomes.push_back(i);
        outcome.deferred = true;
        outcome.dry_run = op.dry_run;
      } else if (parsed->op == CommandOp::kTrigger || parsed->op == CommandOp::kBackfill) {
        ManualFire& fire = out.manual.emplace_back();
        fire.kind = parsed->op == CommandOp::kTrigger ? ManualFire::Kind::kTrigger : ManualFire::Kind::kBackfill;
        fire.id = parsed->id;
        fire.backfill = parsed->backfill;
        fire.source = parsed->source;
        fire.actor = parsed->actor;
        fire.reason = parsed->reason;
        fire.max_late_ms = rules.one_shot.max_catchup_ms;
        out.manual_outcomes.push_back(i);
        outcome.dry_run = parsed->backfill.dry_run;
      } else {
        valid.push_back(std::move(parsed.value()));
      }
    } else {
      // Report the outcome under the Kafka key, so a producer waiting on its id hears back;
      // a key that could not be an id gets no outcome record (the DLQ still has it).
      if (raw.key && IsUsableOutcomeKey(*raw.key)) outcome.id = *raw.key;
      outcome.op = "unknown";
      outcome.applied = false;
      outcome.error = parsed.status().ToString();
      out.rejections.push_back(CommandRejection{i, parsed.status()});
    }
    out.outcomes.push_back(std::move(outcome));
  }
  out.actions = ReduceCommands(valid);
  return out;
}

void RecordManualFireResults(const std::vector<ManualFireResult>& results, PreparedCommandBatch* prepared) {
  for (size_t i = 0; i < results.size() && i < prepared->manual_outcomes.size(); ++i) {
    CommandOutcome& o = prepared->outcomes[prepared->manual_outcomes[i]];
    const ManualFireResult& r = results[i];
    if (r.status.ok()) {
      o.slots = r.slots;
      o.covered = r.covered;
    } else {
      o.applied = false;
      o.error = r.status.ToString();
    }
  }
}

void RecordBulkAcceptResults(const std::vector<Status>& results, PreparedCommandBatch* prepared) {
  for (size_t i = 0; i < results.size() && i < prepared->bulk_outcomes.size(); ++i) {
    if (results[i].ok()) continue;
    CommandOutcome& o = prepared->outcomes[prepared->bulk_outcomes[i]];
    o.deferred = false;
    o.applied = false;
    o.error = results[i].ToString();
  }
}

std::vector<size_t> ActionCommandIndices(const PreparedCommandBatch& prepared, size_t action) {
  std::vector<size_t> out;
  const std::string& id = prepared.actions.at(action).id;
  std::vector<bool> other(prepared.outcomes.size(), false);  // triggers, backfills, bulk commands
  for (size_t i : prepared.manual_outcomes) other[i] = true;
  for (size_t i : prepared.bulk_outcomes) other[i] = true;
  for (size_t i = 0; i < prepared.outcomes.size(); ++i) {
    const CommandOutcome& o = prepared.outcomes[i];
    // A command the parser rejected is not applied; its id (from the key) may still match.
    if (!other[i] && o.applied && o.id == id) out.push_back(i);
  }
  return out;
}

void RefuseInStore(const std::vector<size_t>& raw_indices, const Status& store_status,
                   PreparedCommandBatch* prepared) {
  const Status refused = Status::Invalid("store_error", store_status.message());
  for (size_t i : raw_indices) {
    CommandOutcome& o = prepared->outcomes.at(i);
    o.applied = false;
    o.deferred = false;
    o.slots = std::nullopt;
    o.covered = 0;
    o.error = refused.ToString();
    prepared->store_refusals.push_back(CommandRejection{i, refused});
  }
}

CommandOutcome FinishedBulkOutcome(const BulkOpState& state) {
  CommandOutcome o;
  o.id = state.op.id;
  o.op = CommandOpName(state.op.op);
  o.applied = true;
  o.partition = state.op.source.partition;
  o.offset = state.op.source.offset;
  o.dry_run = state.op.dry_run;
  o.selector_json = EncodeBulkSelector(state.op.selector);
  o.matched = state.matched;
  o.changed = state.changed;
  return o;
}

std::string EncodeCommandOutcome(const CommandOutcome& o) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, o.id);
  out.append(",\"op\":");
  AppendJsonString(&out, o.op);
  out.append(o.applied ? ",\"status\":\"applied\"" : ",\"status\":\"rejected\"");
  out.append(",\"error\":");
  AppendJsonStringOrNull(&out, o.error);
  if (o.slots) {
    fmt::format_to(std::back_inserter(out), ",\"slots\":{}", *o.slots);
    if (o.op == "backfill") {
      fmt::format_to(std::back_inserter(out), ",\"covered\":{},\"dryRun\":{}", o.covered, o.dry_run);
    }
  }
  if (o.selector_json) {
    out.append(",\"selector\":").append(*o.selector_json);
    fmt::format_to(std::back_inserter(out), ",\"matched\":{},\"changed\":{},\"dryRun\":{}", o.matched, o.changed,
                   o.dry_run);
  }
  fmt::format_to(std::back_inserter(out), ",\"partition\":{},\"offset\":{}}}", o.partition, o.offset);
  return out;
}

}  // namespace belfry
