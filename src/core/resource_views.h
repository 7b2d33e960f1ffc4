// The JSON views of belfry's reads, one per resource: what the admin API answers and what
// `belfry ... --json` (or `-o json`) prints for the same resource, byte for byte. Each is a plain
// function over plain values; the HTTP handlers (src/http) and the CLI (src/app/cli_*_commands.cc)
// only read the values and print the view. The schemas are docs/openapi.yaml's.
//
// Where each view is written:
//   a job                       EncodeJobJson                        core/job_json.h
//   one job in detail           EncodeJobDetailView                  here (EncodeJobDetailJson, job_json.h)
//   a page of jobs              EncodeJobPage                        here
//   a page of executions        EncodeExecutionPage                  here
//   a page of changes           EncodeJobChangePage                  core/job_change.h
//   the shards                  EncodeShardsView                     here
//   a job's next fires          EncodeNextFiresView                  here
//   a backfill's dry run        EncodeBackfillCountView              here
//   the load, a rebalance       EncodeLoadProjectionJson             core/load_projection.h
//                               EncodeRebalancePlanJson              core/load_rebalance.h
//   bulk operations             EncodeBulkOpJson                     core/bulk_op_json.h
//                               EncodeBulkOpList                     here
// Page sizes and cursors follow core/pagination.h.
#pragma once

#include <string>
#include <vector>

#include "belfry/bulk_op.h"
#include "belfry/clock.h"
#include "belfry/command.h"
#include "belfry/execution.h"
#include "belfry/job_store.h"
#include "belfry/shard_layout.h"
#include "belfry/shard_ledger.h"
#include "core/calendar_schedule.h"

namespace belfry {

// How many next fires one job's detail view (EncodeJobDetailJson's "nextFires") shows.
inline constexpr int kJobDetailNextFires = 3;

// GET /v1/jobs/{id}, `belfry jobs get --json`: EncodeJobDetailJson of `job` (as GetJobAndStats read
// it) with `stats`, its next kJobDetailNextFires fires and its fires remaining at `now` under the
// database's `layout`.
std::string EncodeJobDetailView(const TimeZoneDatabase& zones, const JobAndStats& job, const std::optional<JobStats>& stats,
                                const ShardLayout& layout, EpochMs now);

// GET /v1/jobs, `belfry jobs list -o json`: {"jobs":[...],"next_cursor"}: each job its
// EncodeJobListItemJson with its next fire under `layout` at `now`, as the job detail's (null when
// paused or ended), the cursor EncodePageCursor(page.next_after_id), null on the last page.
std::string EncodeJobPage(const TimeZoneDatabase& zones, const JobPage& page, const ShardLayout& layout, EpochMs now);

// GET /v1/jobs/{id}/executions, `belfry jobs history -o json`:
// {"id","executions":[EncodeExecutionRecord...],"next_cursor"}, the cursor
// EncodePageCursor(page.next_cursor), null on the last page.
std::string EncodeExecutionPage(const std::string& job_id, const ExecutionPage& page);

// GET /v1/shards, `belfry shards --json`: {"now","shards":[{"shard","fired_through",
// "fired_through_minute","claim_node","claim_until","claim_live","behind_minutes","lag_seconds",
// "debt_minutes","debt_first_minute","debt_node","debt_live"}...]}, lag by ComputeShardLag at `now`
// under the database's `layout`. Absent times, minutes, lags and nodes are null.
std::string EncodeShardsView(const std::vector<ShardState>& states, const ShardLayout& layout, EpochMs now);

// GET /v1/jobs/{id}/next, `belfry jobs next --json`: {"id","paused","next":[UTC slot...],
// "fires":EncodeNextFires(fires)}, and "cron", "timeZone" for a calendar job.
std::string EncodeNextFiresView(const StoredJob& job, const std::vector<NextFire>& fires);

// GET /v1/jobs/{id}/backfill: {"id","from","to","slots","covered"}.
std::string EncodeBackfillCountView(const std::string& job_id, EpochMs from, EpochMs to,
                                    const ManualFireResult& counted);

// GET /v1/bulk-ops: {"bulkOps":[EncodeBulkOpJson...]}.
std::string EncodeBulkOpList(const std::vector<BulkOpState>& ops);

}  // namespace belfry
