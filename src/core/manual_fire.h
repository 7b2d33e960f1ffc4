// ManualFire planning: where the rows of a `trigger` or `backfill` command go, decided on plain
// values (the job as stored, the command's range and Kafka timestamp, the ranges earlier
// backfills of the job covered). The store runs it inside the transaction that stores the rows;
// the HTTP dry run runs it on a read. See docs/manual-fires.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "belfry/clock.h"
#include "belfry/command.h"
#include "belfry/job.h"
#include "belfry/shard_layout.h"
#include "belfry/status.h"
#include "core/time_zone_database.h"

namespace belfry {

struct ManualFireRules {
  // The database's shard layout record: each minute's firing shard and tick of the job's rows.
  ShardLayout layout;
  // A trigger command applied later than this after its timestamp (the consumer lagged, or a
  // replay of an old command) stores its row in its own, past, minute, where it never fires.
  int64_t max_late_ms = 15 * 60 * 1000;
};

inline constexpr int32_t kMaxBackfillSlots = 10'000;
inline constexpr int32_t kMaxBackfillRatePerMinute = 10'000;
inline constexpr int32_t kDefaultBackfillRatePerMinute = 60;
inline constexpr int64_t kMaxBackfillSpanMs = 366LL * 24 * 3600 * 1000;

// The rules of a backfill's range, shared by the command parser and the HTTP dry run: from < to,
// to not after `now_ms` (the command's timestamp: a backfill fires past slots only), at most
// kMaxBackfillSpanMs apart. Rejects with invalid_backfill.
Status CheckBackfillRange(EpochMs from_ms, EpochMs to_ms, EpochMs now_ms);

// One row to store: a one-shot of the job's shard, topic, key, details and priority.
struct ManualRow {
  std::string row_id;  // DerivedRowId(job, kTrigger or kBackfill, scheduled_for_ms)
  EpochMs scheduled_for_ms = 0;  // the trigger's scheduledFor
  int64_t run_minute = 0;        // the minute whose tick of the shard fires it, at the earliest
  // The store may move run_minute to the shard's next minute when the shard is past it by the
  // time the row is stored, but not past this one; -1: no bound (backfills, whose ranges the
  // store records, so that a replay adds nothing).
  int64_t late_limit_minute = -1;
};

// A trigger: its scheduledFor is the command's timestamp (its own instant, never one of the job's
// slots: a consumer that dedupes on (jobId, scheduledFor) must not drop it as a repeat of a slot),
// and it fires at the shard's first slot at least kOneShotLateMarginMs after that.
ManualRow PlanManualTrigger(std::string_view job_id, int32_t shard, EpochMs message_ms, const ManualFireRules& rules);

struct BackfillPlan {
  Status status;  // invalid_backfill when the job cannot be backfilled or the range is too big
  std::vector<ManualRow> rows;  // the slots to fire, oldest first (none for a dry run)
  int64_t slots = 0;    // rows, or for a dry run the rows it would store
  int64_t covered = 0;  // slots in the range that an earlier backfill already covered
};

// The job's slots in [range.from_ms, range.to_ms), by its schedule (interval or calendar; its
// start and end dates apply, its pause does not), minus the slots inside `covered` (earlier
// backfills' [from, to) ranges). Each keeps its own scheduledFor; they fire oldest first, at most
// range.rate_per_minute per minute, from the shard's first slot at least kOneShotLateMarginMs
// after `message_ms`. One-shots and derived rows have no slots to backfill; a range that holds
// more than kMaxBackfillSlots of the job's slots (covered or not) is refused as a whole. A
// calendar job's zone comes from `zones`.
BackfillPlan PlanBackfill(const TimeZoneDatabase& zones, const JobSpec& job, const BackfillRange& range,
                          const std::vector<std::pair<EpochMs, EpochMs>>& covered, EpochMs message_ms,
                          const ManualFireRules& rules);

}  // namespace belfry
