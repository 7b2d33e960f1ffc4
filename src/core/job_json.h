// The JSON view of a stored job, shared by the CLI and the admin API:
// {"id","owner","topic","key","intervalMinutes","offsetMinutes","shard","cron","timeZone","startDateTime",
//  "endDateTime","paused","priority","jobDetails","createdAt","updatedAt"}
#pragma once

#include <string>

#include "belfry/job.h"

namespace belfry {

// jobDetails is embedded as the stored JSON object; absent dates are null.
std::string EncodeJobJson(const StoredJob& job);

}  // namespace belfry
