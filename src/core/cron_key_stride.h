// The key layout of cron_slots.key (docs/calendar-schedules.md): zone_id * kCronKeyStride + code,
// so that each zone's keys are one range of the table's primary key. Also a macro, the one
// definition that the SQL of src/pg splices in (BELFRY_STRINGIFY), so the two cannot drift.
#pragma once

#include <cstdint>

#define BELFRY_CRON_KEY_STRIDE 2048

namespace belfry {

constexpr int64_t kCronKeyStride = BELFRY_CRON_KEY_STRIDE;

}  // namespace belfry
