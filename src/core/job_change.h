// The audit trail's rules over plain values (docs/audit-trail.md): when an applied command
// changed a job, and the versioned change event that records it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "belfry/job.h"
#include "belfry/job_change.h"

namespace belfry {

// The change event's version; a consumer reads "version" first.
inline constexpr int kJobChangeEventVersion = 1;

// The change from `before` to `after` of job `job_id` by `op` (job_id, op and the two snapshots
// set; the caller sets the rest), or nullopt when the job is as it was: both absent, or the same
// JSON view apart from updatedAt (a replay, a re-upsert of the same spec, a pause of a paused
// job). A command that leaves a job unchanged records nothing.
std::optional<JobChange> JobChangeBetween(const std::string& job_id, const std::string& op,
                                          const std::optional<StoredJob>& before,
                                          const std::optional<StoredJob>& after);

// The change event, the value published to the changes topic under the job id:
// {"version":1,"changeId","jobId","op","bulkId","actor","reason",
//  "source":{"partition","offset","timestamp"},"changedAt","before","after","detail"}.
// bulkId, actor, reason, before, after and detail are null when empty; before and after are the
// job as EncodeJobJson shows it. A bulk step's source is its bulk command's.
std::string EncodeJobChangeJson(const JobChange& change);

// A page of job `job_id`'s history, newest first, as GET /v1/jobs/{id}/changes and `belfry jobs
// audit -o json` show it: {"id","changes":[EncodeJobChangeJson...],"next_cursor"}. The cursor
// is the page's last change_id when the page is full (`limit` changes: more may follow), else null.
std::string EncodeJobChangePage(const std::string& job_id, const std::vector<JobChange>& changes, int64_t limit);

}  // namespace belfry
