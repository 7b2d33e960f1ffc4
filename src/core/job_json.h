// The JSON views of a stored job, one for both the CLI (`jobs get --json`, `jobs list -o json`) and
// the admin API (GET /v1/jobs/{id}, GET /v1/jobs). The schema is docs/openapi.yaml's Job and
// JobDetail.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/execution.h"
#include "belfry/job.h"
#include "belfry/job_store.h"
#include "core/calendar_schedule.h"

namespace belfry {

// The job as stored (an item of a job listing):
// {"id","owner","topic","key","labels","intervalMinutes","offsetMinutes","shard","cron","timeZone",
//  "startDateTime","endDateTime","maxFires","firesEndAt","paused","priority","runAt","scheduledFor",
//  "maxRetries","retryBackoff",["retryOf","attempt" on retry rows],"jobDetails","createdAt","updatedAt"}.
// jobDetails is embedded as the stored JSON object; an empty owner or key, and absent dates,
// are null; updatedAt is always the last field. endDateTime is the
// end the command asked for; a limited job (maxFires) shows in
// firesEndAt the end its count puts on it (null for an unlimited job; see docs/fire-limits.md).
std::string EncodeJobJson(const StoredJob& job);

// One field of EncodeJobJson's object: its name and its JSON value, in the view's order.
struct JobViewField {
  std::string_view name;
  std::string value;
};
// EncodeJobJson's fields, in order (what the audit trail compares field by field).
std::vector<JobViewField> JobViewFields(const StoredJob& job);
// The object of `fields`, in their order: EncodeJobJson(job) is EncodeJobViewFields(JobViewFields(job)).
std::string EncodeJobViewFields(const std::vector<JobViewField>& fields);

// A job in a list (GET /v1/jobs): EncodeJobJson's fields, then "nextTriggerAt" (null when none).
std::string EncodeJobListItemJson(const StoredJob& job, std::optional<EpochMs> next_trigger);

// One job with what is known about it: EncodeJobListItemJson's fields (the first of `fires` as its
// next trigger), then "nextFires" (EncodeNextFires of `fires`), "lastOutcome" (null until a terminal report arrives),
// "consecutiveFailures", "totalSucceeded" and "totalFailed" (0 without stats), and
// "firesRemaining" (`fires_remaining`: FiresRemaining at the caller's now; null when unlimited),
// and "lastDeliveryError": {"error","topic","slot","at"} of the job's last trigger the broker
// refused for good (null when none was).
std::string EncodeJobDetailJson(const StoredJob& job, const std::optional<JobStats>& stats,
                                const std::vector<NextFire>& fires, std::optional<int64_t> fires_remaining,
                                const std::optional<DeliveryErrorRecord>& last_delivery_error = std::nullopt);

}  // namespace belfry
