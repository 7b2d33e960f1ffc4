// ShardLayout: the shard layout record of docs/resharding.md, and the rules that follow from it
// on plain values: where a job's rows are stored, which shards fire a minute and when, and which
// stored partitions a firing's due query reads. Growing the shard count online (issue 19, part
// 2) keeps every (job, minute) fired by exactly one firing through these functions; the test
// checks that over every phase of a reshard. The firer, the ticker, the catch-up planner, the
// job store and the retries all plan by them, with the record their claim or transaction read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "belfry/clock.h"
#include "belfry/shard_layout.h"
#include "belfry/status.h"
#include "core/slot_math.h"

namespace belfry {

// Invalid unless `to` is a multiple of `from` (at least twice it), at most 6000, and divides a
// minute into whole ticks of at least 10 ms.
Status ValidateReshard(int32_t from, int32_t to);

// The record as stored in belfry_meta (key "layout"), and back. Parse is Invalid for anything
// but a record Encode could have written, with a consistent phase.
std::string EncodeShardLayout(const ShardLayout& layout);
StatusOr<ShardLayout> ParseShardLayout(std::string_view json);

// The shard whose partition holds the job's rows.
int32_t StoredShard(std::string_view id, const ShardLayout& layout);

// The shard_state row that fires minute `minute` of the jobs stored in `stored_shard`: the
// stored shard, except while the old layout fires that minute, when the old shard does (the
// rows LockPlacingShardStates locks to place rows: src/pg/pg_job_sql.h).
int32_t FiringShardRow(const ShardLayout& layout, int64_t minute, int32_t stored_shard);

// The cut-over minute while one is recorded (kCutover), else nullopt: the statements that place
// one-shot rows take it, so that a row moved past it follows the new shard's progress.
std::optional<int64_t> PendingCutoverMinute(const ShardLayout& layout);

// The shard_state rows whose progress may place a one-shot row of the jobs stored in
// `stored_shard` (FiringShardRow of any minute; both during a cut-over), ascending: the rows a
// writer locks, in that order, from before its placement reads until its commit.
std::vector<int32_t> PlacingShardRows(const ShardLayout& layout, int32_t stored_shard);

// A job as one tick's slot arithmetic sees it in `minute` (fire limits count a job's slots by
// one shard and tick, core/fire_limit.h): its firing shard then, with that minute's tick.
struct FiringBasis {
  int32_t shard = 0;
  int64_t tick_ms = 500;
};
FiringBasis FiringBasisOf(const ShardLayout& layout, int64_t minute, int32_t stored_shard);

// The slot of minute `minute` of the jobs stored in `stored_shard`: their firing shard's, with
// the minute's tick.
EpochMs StoredShardSlotMs(const ShardLayout& layout, int64_t minute, int32_t stored_shard);

// The first minute whose slot of the jobs stored in `stored_shard` is at or after `t`, each
// minute with its layout's firing shard and tick: where a retry, a manual trigger or a late
// one-shot row goes, so that it never fires before its time.
int64_t FirstLayoutMinuteAtOrAfter(const ShardLayout& layout, EpochMs t, int32_t stored_shard);

// The most shards any minute fires with: `to` once a cut-over is recorded, else `from`.
int32_t MaxFiringShards(const ShardLayout& layout);

// How many stored shards (partitions) hold rows: `from`, or `to` once a reshard has begun.
int32_t StoredShardCount(const ShardLayout& layout);

// The tick of the newest firing layout: `to`'s from the cut-over on, else `from`'s (what a tool
// that reads the record once, such as tick_timer, takes as the database's tick).
int64_t LatestTickMs(const ShardLayout& layout);

// The firing layout of `minute`: how many shards fire it, one every tick_ms.
struct MinuteLayout {
  int32_t shard_count = 120;
  int64_t tick_ms = 500;
};
MinuteLayout FiringLayout(const ShardLayout& layout, int64_t minute);

// The stored shards (partitions) whose due rows firing shard `shard` of `minute` selects: its
// own, and under the old layout once a reshard has begun, every new shard it splits into.
// REQUIRES: 0 <= shard < FiringLayout(layout, minute).shard_count.
std::vector<int32_t> StoredShardsOf(const ShardLayout& layout, int64_t minute, int32_t shard);

// The part of [first, last] that one query may cover: a coalesced catch-up range never spans
// the cut-over, since the two sides differ in shards and slots. Returns [first, x] with x <= last.
// REQUIRES: first <= last.
int64_t LastMinuteOfSameLayout(const ShardLayout& layout, int64_t first, int64_t last);

// Slot math under a layout whose tick changes at the cut-over (core/slot_math.h for one tick).

// Whether `shard` fires in `minute`: it is a shard of the minute's firing layout.
bool FiresInMinute(const ShardLayout& layout, int64_t minute, int32_t shard);

// The slot of `shard` in `minute`, with the minute's tick. REQUIRES: FiresInMinute.
EpochMs LayoutSlotMs(const ShardLayout& layout, int64_t minute, int32_t shard);

// The ticker's order: the first slot at or after `ms`, and the slot after `slot` (the next
// shard of its minute, else shard 0 of the next minute, each minute with its own layout).
SlotRef FirstLayoutSlotAtOrAfter(const ShardLayout& layout, EpochMs ms);
SlotRef NextLayoutSlot(const ShardLayout& layout, SlotRef slot);

// The last minute in which `shard` fires whose slot is at or before `ms`; nullopt when there is
// none (a new shard, before the cut-over).
std::optional<int64_t> LastLayoutSlotMinuteAtOrBefore(const ShardLayout& layout, EpochMs ms, int32_t shard);

}  // namespace belfry
