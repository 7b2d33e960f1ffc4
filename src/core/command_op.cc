#include "belfry/command.h"

namespace belfry {

const char* CommandOpName(CommandOp op) {
  switch (op) {
    case CommandOp::kUpsert:
      return "upsert";
    case CommandOp::kDelete:
      return "delete";
    case CommandOp::kPause:
      return "pause";
    case CommandOp::kResume:
      return "resume";
    case CommandOp::kTrigger:
      return "trigger";
    case CommandOp::kBackfill:
      return "backfill";
  }
  return "unknown";
}

std::optional<CommandOp> CommandOpFromName(std::string_view name) {
  for (CommandOp op : {CommandOp::kUpsert, CommandOp::kDelete, CommandOp::kPause, CommandOp::kResume,
                       CommandOp::kTrigger, CommandOp::kBackfill}) {
    if (name == CommandOpName(op)) return op;
  }
  return std::nullopt;
}

}  // namespace belfry
