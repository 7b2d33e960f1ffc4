// BulkSelector parsing and matching: the "selector" of a bulk command (docs/bulk-operations.md).
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "belfry/bulk_op.h"
#include "belfry/status.h"

namespace belfry {

// {"owner": "...", "labels": {...}}: an object with an owner (core/job_owner.h's rule, not empty),
// labels (core/job_labels.h's rules; {} is none), or both; nothing else. Rejects with
// invalid_selector, invalid_owner or invalid_labels.
Status ParseBulkSelector(const simdjson::dom::element& el, BulkSelector* out);

// The selector as a JSON object, {"owner":...,"labels":{...}} with the terms it has (outcomes
// and the admin API show it).
std::string EncodeBulkSelector(const BulkSelector& selector);

// True iff a job with this owner and labels (canonical; empty text counts as {}) matches: the
// store's WHERE clause, for the test fakes.
bool BulkSelectorMatches(const BulkSelector& selector, std::string_view owner, std::string_view labels_json);

}  // namespace belfry
