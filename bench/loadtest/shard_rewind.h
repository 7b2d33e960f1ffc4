// ShardRewind: makes belfry owe the last K minutes of every shard, for `burst` and `catchup`.
// REQUIRES: no belfry node runs (WaitForNoLiveLeases checks).
#pragma once

#include <cstdint>

#include "belfry/clock.h"
#include "loadtest/pg_connection.h"

namespace belfry::loadtest {

// Waits until no shard has a live claim or debt lease (belfry is not running), or throws.
void WaitForNoLiveLeases(PgConnection& conn, int64_t wait_ms);

struct Rewind {
  int64_t shards = 0;         // rows rewound
  int64_t fired_through = 0;  // C - 1 - K, C the current epoch minute
  EpochMs first_slot_ms = 0;  // (C - K) * 60 s: the first slot now unfired
  EpochMs cut_ms = 0;         // when the rewind ran: every slot up to it is unfired
};

// Sets every shard's fired_through to C - 1 - K and clears its catch-up debt and debt lease, so
// that minutes C-K .. C-1, and minute C up to now, are unfired.
Rewind RewindShards(PgConnection& conn, int32_t minutes);

// Missed shard-minutes belfry's catch-up still owes (docs/catch-up.md).
int64_t CatchUpDebtMinutes(PgConnection& conn);

}  // namespace belfry::loadtest
