#include "core/manual_fire.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/derived_row_id.h"
#include "core/iso_time.h"
#include "core/one_shot_placement.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"

namespace belfry {
namespace {

// The first minute a row of the jobs stored in `shard` may fire in for a command timestamped
// `message_ms`.
int64_t FirstManualMinute(int32_t shard, EpochMs message_ms, const ShardLayout& layout) {
  return FirstLayoutMinuteAtOrAfter(layout, message_ms + kOneShotLateMarginMs, shard);
}

bool Covered(EpochMs slot, const std::vector<std::pair<EpochMs, EpochMs>>& covered) {
  return std::any_of(covered.begin(), covered.end(),
                     [slot](const std::pair<EpochMs, EpochMs>& r) { return r.first <= slot && slot < r.second; });
}

}  // namespace

Status CheckBackfillRange(EpochMs from_ms, EpochMs to_ms, EpochMs now_ms) {
  if (from_ms >= to_ms) {
    return Status::Invalid("invalid_backfill",
                           fmt::format("from {} is not before to {}", FormatIsoTime(from_ms), FormatIsoTime(to_ms)));
  }
  if (to_ms > now_ms) {
    return Status::Invalid("invalid_backfill",
                           fmt::format("to {} is after the command's timestamp {}: a backfill fires past slots only",
                                       FormatIsoTime(to_ms), FormatIsoTime(now_ms)));
  }
  if (to_ms - from_ms > kMaxBackfillSpanMs) {
    return Status::Invalid("invalid_backfill", fmt::format("from {} to {} is longer than {} days", FormatIsoTime(from_ms),
                                                           FormatIsoTime(to_ms), kMaxBackfillSpanMs / 86'400'000));
  }
  return Status::Ok();
}

ManualRow PlanManualTrigger(std::string_view job_id, int32_t shard, EpochMs message_ms, const ManualFireRules& rules) {
  ManualRow row;
  row.scheduled_for_ms = message_ms;
  // The one instant of the minute that is also a slot of this job's shard: step off it.
  if (StoredShardSlotMs(rules.layout, EpochMinuteOf(message_ms), shard) == message_ms) ++row.scheduled_for_ms;
  row.run_minute = FirstManualMinute(shard, message_ms, rules.layout);
  row.late_limit_minute = row.run_minute + rules.max_late_ms / kMsPerMinute;
  row.row_id = DerivedRowId(job_id, DerivedKind::kTrigger, row.scheduled_for_ms);
  return row;
}

BackfillPlan PlanBackfill(const TimeZoneDatabase& zones, const JobSpec& job, const BackfillRange& range,
                          const std::vector<std::pair<EpochMs, EpochMs>>& covered, EpochMs message_ms,
                          const ManualFireRules& rules) {
  BackfillPlan plan;
  if (job.one_shot()) {
    plan.status = Status::Invalid("invalid_backfill",
                                  fmt::format("job {} is a one-shot{}: it has no schedule to backfill", job.id,
                                              job.retry_of.empty() ? "" : " (a scheduled retry)"));
    return plan;
  }
  // The slots in [from, to): strictly after from - 1 ms, and the range's end as the job's end
  // (so that a sparse calendar is searched no further than the range).
  // The job's slots by the layout that fires the command's minute (docs/resharding.md: a range
  // before a cut-over is computed at the newer layout's offsets within each minute).
  const FiringBasis basis = FiringBasisOf(rules.layout, EpochMinuteOf(message_ms), job.shard);
  JobSpec within = job;
  within.end_at = job.end_at ? std::min(*job.end_at, range.to_ms) : range.to_ms;
  within.shard = basis.shard;
  const std::vector<EpochMs> times =
      NextJobTriggerTimes(zones, within, basis.tick_ms, range.from_ms - 1, kMaxBackfillSlots + 1);
  if (static_cast<int64_t>(times.size()) > kMaxBackfillSlots) {
    plan.status = Status::Invalid(
        "invalid_backfill",
        fmt::format("{} to {} holds more than {} slots of job {}: split the range into several backfills",
                    FormatIsoTime(range.from_ms), FormatIsoTime(range.to_ms), kMaxBackfillSlots, job.id));
    return plan;
  }
  std::vector<EpochMs> slots;
  for (EpochMs t : times) {
    if (Covered(t, covered)) {
      ++plan.covered;
    } else {
      slots.push_back(t);
    }
  }
  plan.slots = static_cast<int64_t>(slots.size());
  if (range.dry_run) return plan;
  const int64_t first = FirstManualMinute(job.shard, message_ms, rules.layout);
  const int64_t rate = std::max<int32_t>(1, range.rate_per_minute);
  plan.rows.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    ManualRow row;
    row.scheduled_for_ms = slots[i];
    row.run_minute = first + static_cast<int64_t>(i) / rate;
    row.late_limit_minute = -1;
    row.row_id = DerivedRowId(job.id, DerivedKind::kBackfill, slots[i]);
    plan.rows.push_back(std::move(row));
  }
  return plan;
}

}  // namespace belfry
