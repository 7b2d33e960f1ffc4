// LayoutNextFires: a job's upcoming fires as the firer fires them under the database's shard
// layout record (docs/resharding.md), for the previews of the admin API and the CLI
// (`GET /v1/jobs/{id}/next`, the job view's nextFires, `belfry jobs next|get`). After a reshard
// the record, not the node's configured shard_count, says which shard and tick fire a job.
#pragma once

#include <optional>
#include <vector>

#include "belfry/clock.h"
#include "belfry/job.h"
#include "belfry/shard_layout.h"
#include "core/calendar_schedule.h"
#include "core/time_zone_database.h"

namespace belfry {

// NextFires of the job with each minute's slot from the layout: the job's stored shard (the
// shard of its row as read, spec.shard, which a reshard's move rewrites) fired by that minute's
// firing shard and tick (StoredShardSlotMs), so a cut-over in the window moves the later fires
// to the new layout's slots. A calendar job's zone comes from `zones`.
std::vector<NextFire> LayoutNextFires(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                      const ShardLayout& layout, EpochMs now, int n);

// FiresRemaining of the job with the firing shard and tick of now's minute under the layout.
std::optional<int64_t> LayoutFiresRemaining(const TimeZoneDatabase& zones, const JobSpec& spec, bool paused,
                                            std::optional<EpochMs> paused_at, const ShardLayout& layout,
                                            EpochMs now);

}  // namespace belfry
