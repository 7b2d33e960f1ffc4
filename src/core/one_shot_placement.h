// OneShotPlacement: where a one-shot job's trigger goes, decided on plain values from the
// command alone (its runAt, the job's shard and the command's Kafka timestamp), so that replaying
// the commands topic stores the same row. See docs/executions.md, "One-shot jobs".
#pragma once

#include <cstdint>

#include "belfry/clock.h"

namespace belfry {

struct OneShotRules {
  int64_t tick_ms = 500;
  int64_t max_catchup_ms = 15 * 60 * 1000;
  // False under misfire policy `skip`: a one-shot whose slot has passed is never fired late.
  bool fire_late = true;
};

struct OneShotPlacement {
  int64_t run_minute = 0;        // the minute whose tick of the shard fires it
  EpochMs scheduled_for_ms = 0;  // slot(minute of run_at, shard): the trigger's scheduledFor
  // The latest minute the store may move run_minute to when the shard already fired run_minute
  // by the time the command is applied; -1 = never (the one-shot then never fires).
  int64_t late_limit_minute = -1;
  bool fires = true;  // false when the slot is past and may not fire late (beyond the window, skip)
};

// A slot "has passed" when it is at or before the message timestamp. Then, when late firing is
// allowed and the message is within max_catchup of the slot, the one-shot fires at its shard's
// first slot at least kOneShotLateMarginMs after the message (with its original scheduledFor);
// otherwise it is stored at its own (past) minute and never fires.
inline constexpr int64_t kOneShotLateMarginMs = 1000;

// REQUIRES: 0 <= shard, tick_ms > 0.
OneShotPlacement PlaceOneShot(EpochMs run_at_ms, int32_t shard, EpochMs message_ms,
                              const OneShotRules& rules);

}  // namespace belfry
