// The JSON view of a bulk operation and its progress (GET /v1/bulk-ops/{id}, `belfry bulk get`).
#pragma once

#include <string>

#include "belfry/bulk_op.h"

namespace belfry {

// {"id","op","selector","reason","actor","dryRun","state":"running"|"finished","matched","changed",
//  "steps","nextShard","afterId","commandAt","acceptedAt","finishedAt","publishedAt","source"}.
// reason and actor are null when absent, as are finishedAt and publishedAt until they happen.
std::string EncodeBulkOpJson(const BulkOpState& state);

}  // namespace belfry
