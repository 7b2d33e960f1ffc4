// TriggerEncoder: the trigger message value, built without re-parsing the stored details:
// {"jobId":..,"scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":N,"jobDetails":{..}}
// A retry (attempt >= 1) has "attempt":n after intervalMinutes, and a trigger or backfill that a
// command asked for has "manual":"trigger"|"backfill" next; ordinary triggers have neither.
#pragma once

#include <string>

#include "belfry/trigger_sink.h"

namespace belfry {

// Appends the JSON value for `t` to `out` (which is cleared first). The details are spliced in
// verbatim: they were validated and minified at ingestion.
void EncodeTriggerValue(const TriggerView& t, std::string* out);

// The belfry-scheduled-for header value: epoch milliseconds in decimal.
std::string ScheduledForHeader(EpochMs scheduled_for_ms);

// The belfry-attempt header value of a retry: the attempt number in decimal.
std::string AttemptHeader(int32_t attempt);

}  // namespace belfry
