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

// The change from `before` to `after` of job `job_id` by `op` (job_id, op and the two stored
// forms set; the caller sets the rest), or nullopt when the job is as it was: both absent, or
// the same view apart from updatedAt (a replay, a re-upsert of the same spec, a pause of a
// paused job). A command that leaves a job unchanged records nothing.
// What is stored is what changed (docs/audit-trail.md): a create's after and a delete's before
// are the whole job (EncodeJobJson); a change to a job that stays stores, before and after, only
// "id", the fields that differ and "updatedAt".
std::optional<JobChange> JobChangeBetween(const std::string& job_id, const std::string& op,
                                          const std::optional<StoredJob>& before,
                                          const std::optional<StoredJob>& after);

// The stored before and after of a trigger or backfill, which leave the job as it was: {"id"}.
std::string JobFireSnapshot(const std::string& job_id);

// Whether `change` is stored as the fields that changed (both before and after set), so that its
// whole views have to be rebuilt from the job's state (ExpandJobChanges); a create or a delete is
// stored whole.
bool StoresChangedFields(const JobChange& change);

// Turns one job's stored changes (`newest_first`, consecutive: no change of the job between two
// of them is missing, and none newer than the first) back into whole views of the job, in
// place: walking back from `current_json` (EncodeJobJson of the job as it is now; empty when it
// has no row), each change's after is the state the next one started from, and its before that
// state with the change's stored before fields; a create's after and a delete's before are whole
// already. Changes the walk cannot reach from a whole view keep their stored fields. A field a
// system change moved (the tzdata re-plan, a reshard), which no change records, shows as it is now.
void ExpandJobChanges(const std::string& current_json, std::vector<JobChange>* newest_first);

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
