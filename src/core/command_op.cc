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

}  // namespace belfry
