// RetryFields: validation of a command's "maxRetries" and "retryBackoff" fields.
// See docs/executions.md, "Retries" and README.md, "Command format".
#pragma once

#include <simdjson.h>

#include <optional>

#include "belfry/job.h"
#include "belfry/status.h"

namespace belfry {

// maxRetries: an integer in [0, kMaxRetriesLimit]. Rejects with invalid_retries.
Status ParseMaxRetries(const simdjson::dom::element& el, int32_t* out);

// retryBackoff: {"initialSeconds": int, "multiplier": number, "maxSeconds": int}, every member
// optional (defaults 60, 2, 3600, and maxSeconds at least initialSeconds when only that is
// given). initialSeconds in [1, 7 days], multiplier in [1, 10], maxSeconds in
// [initialSeconds, 7 days]. Rejects with invalid_retry_backoff (wrong_type when not an object).
Status ParseRetryBackoff(const simdjson::dom::element& el, RetryBackoff* out);

}  // namespace belfry
