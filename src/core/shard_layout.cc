#include "core/shard_layout.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/shard_hash.h"
#include "core/slot_math.h"

namespace belfry {
namespace {

const char* PhaseName(ShardLayout::Phase phase) {
  switch (phase) {
    case ShardLayout::Phase::kStable:
      return "stable";
    case ShardLayout::Phase::kMoving:
      return "moving";
    case ShardLayout::Phase::kCutover:
      return "cutover";
  }
  return "stable";
}

Status Bad(const std::string& why) { return Status::Invalid("shard_layout", "shard layout record: " + why); }

}  // namespace

Status ValidateReshard(int32_t from, int32_t to) {
  if (from <= 0) return Status::Invalid("reshard", fmt::format("the current shard count {} is not positive", from));
  if (to < 2 * from || to % from != 0) {
    return Status::Invalid("reshard", fmt::format("{} is not a multiple of the current shard count {} (at least "
                                                  "twice it): each shard must split in place",
                                                  to, from));
  }
  if (to > 6000) return Status::Invalid("reshard", fmt::format("{} shards is more than 6000", to));
  if (kMsPerMinute % to != 0 || TickMsOf(to) < 10) {
    return Status::Invalid("reshard", fmt::format("{} shards do not divide a minute into whole ticks of 10 ms or "
                                                  "more",
                                                  to));
  }
  return Status::Ok();
}

std::string EncodeShardLayout(const ShardLayout& l) {
  if (l.phase == ShardLayout::Phase::kStable) return fmt::format("{{\"from\":{}}}", l.from);
  return fmt::format("{{\"from\":{},\"to\":{},\"phase\":\"{}\",\"movedThrough\":{},\"cutoverMinute\":{}}}", l.from,
                     l.to, PhaseName(l.phase), l.moved_through, l.cutover_minute);
}

StatusOr<ShardLayout> ParseShardLayout(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(json.data(), json.size()).get(obj) != simdjson::SUCCESS) return Bad("not a JSON object");
  ShardLayout l;
  int64_t from = 0;
  if (obj["from"].get(from) != simdjson::SUCCESS || from <= 0 || from > 6000) return Bad("\"from\" is missing or bad");
  l.from = static_cast<int32_t>(from);
  std::string_view phase;
  if (obj["phase"].get(phase) != simdjson::SUCCESS) {
    if (obj.size() != 1) return Bad("a stable layout has only \"from\"");
    return l;
  }
  if (phase == "moving") {
    l.phase = ShardLayout::Phase::kMoving;
  } else if (phase == "cutover") {
    l.phase = ShardLayout::Phase::kCutover;
  } else {
    return Bad("unknown phase");
  }
  int64_t to = 0, moved = 0, cutover = 0;
  if (obj["to"].get(to) != simdjson::SUCCESS || obj["movedThrough"].get(moved) != simdjson::SUCCESS ||
      obj["cutoverMinute"].get(cutover) != simdjson::SUCCESS || obj.size() != 5) {
    return Bad("a reshard needs exactly from, to, phase, movedThrough and cutoverMinute");
  }
  if (to > 6000 || !ValidateReshard(l.from, static_cast<int32_t>(to)).ok()) return Bad("\"to\" is bad");
  l.to = static_cast<int32_t>(to);
  if (moved < -1 || moved >= l.from) return Bad("\"movedThrough\" is out of range");
  l.moved_through = static_cast<int32_t>(moved);
  l.cutover_minute = cutover;
  if (l.phase == ShardLayout::Phase::kCutover && (l.moved_through != l.from - 1 || cutover <= 0)) {
    return Bad("a cut-over needs every shard moved and a cut-over minute");
  }
  if (l.phase == ShardLayout::Phase::kMoving && cutover != 0) return Bad("a move has no cut-over minute yet");
  return l;
}

int32_t StoredShard(std::string_view id, const ShardLayout& l) {
  const int32_t old_shard = ShardForId(id, l.from);
  switch (l.phase) {
    case ShardLayout::Phase::kStable:
      return old_shard;
    case ShardLayout::Phase::kMoving:
      return old_shard <= l.moved_through ? ShardForId(id, l.to) : old_shard;
    case ShardLayout::Phase::kCutover:
      return ShardForId(id, l.to);
  }
  return old_shard;
}

int32_t FiringShardRow(const ShardLayout& l, int64_t minute, int32_t stored_shard) {
  if (l.phase == ShardLayout::Phase::kCutover && minute >= l.cutover_minute) return stored_shard;
  return stored_shard % l.from;
}

std::optional<int64_t> PendingCutoverMinute(const ShardLayout& l) {
  if (l.phase != ShardLayout::Phase::kCutover) return std::nullopt;
  return l.cutover_minute;
}

std::vector<int32_t> PlacingShardRows(const ShardLayout& l, int32_t stored_shard) {
  const int32_t old_row = stored_shard % l.from;
  if (l.phase != ShardLayout::Phase::kCutover || old_row == stored_shard) return {old_row};
  return {old_row, stored_shard};
}

FiringBasis FiringBasisOf(const ShardLayout& l, int64_t minute, int32_t stored_shard) {
  return FiringBasis{FiringShardRow(l, minute, stored_shard), FiringLayout(l, minute).tick_ms};
}

EpochMs StoredShardSlotMs(const ShardLayout& l, int64_t minute, int32_t stored_shard) {
  const FiringBasis b = FiringBasisOf(l, minute, stored_shard);
  return SlotMs(minute, b.shard, b.tick_ms);
}

int64_t FirstLayoutMinuteAtOrAfter(const ShardLayout& l, EpochMs t, int32_t stored_shard) {
  const int64_t m = EpochMinuteOf(t);
  return StoredShardSlotMs(l, m, stored_shard) >= t ? m : m + 1;
}

int32_t MaxFiringShards(const ShardLayout& l) { return l.phase == ShardLayout::Phase::kCutover ? l.to : l.from; }

int32_t StoredShardCount(const ShardLayout& l) { return l.phase == ShardLayout::Phase::kStable ? l.from : l.to; }

int64_t LatestTickMs(const ShardLayout& l) {
  return TickMsOf(l.phase == ShardLayout::Phase::kCutover ? l.to : l.from);
}

MinuteLayout FiringLayout(const ShardLayout& l, int64_t minute) {
  const int32_t count = l.phase == ShardLayout::Phase::kCutover && minute >= l.cutover_minute ? l.to : l.from;
  return MinuteLayout{count, TickMsOf(count)};
}

std::vector<int32_t> StoredShardsOf(const ShardLayout& l, int64_t minute, int32_t shard) {
  if (l.phase == ShardLayout::Phase::kStable || FiringLayout(l, minute).shard_count == l.to) return {shard};
  // The old layout while rows move to (or have moved to) the new one: shard s of `from` splits
  // into s, s + from, ..., and each of its jobs is in exactly one of those partitions.
  std::vector<int32_t> out;
  for (int32_t x = shard; x < l.to; x += l.from) out.push_back(x);
  return out;
}

int64_t LastMinuteOfSameLayout(const ShardLayout& l, int64_t first, int64_t last) {
  if (l.phase == ShardLayout::Phase::kCutover && first < l.cutover_minute && last >= l.cutover_minute) {
    return l.cutover_minute - 1;
  }
  return last;
}

bool FiresInMinute(const ShardLayout& l, int64_t minute, int32_t shard) {
  return shard >= 0 && shard < FiringLayout(l, minute).shard_count;
}

EpochMs LayoutSlotMs(const ShardLayout& l, int64_t minute, int32_t shard) {
  return SlotMs(minute, shard, FiringLayout(l, minute).tick_ms);
}

SlotRef FirstLayoutSlotAtOrAfter(const ShardLayout& l, EpochMs ms) {
  const int64_t minute = EpochMinuteOf(ms);
  const SlotRef in_tick = FirstSlotAtOrAfter(ms, FiringLayout(l, minute).tick_ms);
  // FirstSlotAtOrAfter may roll into the next minute, whose layout may differ: its shard 0.
  if (in_tick.minute != minute) return SlotRef{in_tick.minute, 0};
  return in_tick;
}

SlotRef NextLayoutSlot(const ShardLayout& l, SlotRef slot) {
  if (slot.shard + 1 < FiringLayout(l, slot.minute).shard_count) return SlotRef{slot.minute, slot.shard + 1};
  return SlotRef{slot.minute + 1, 0};
}

std::optional<int64_t> LastLayoutSlotMinuteAtOrBefore(const ShardLayout& l, EpochMs ms, int32_t shard) {
  // Its slot in ms's minute, else in the minute before; a shard that does not fire there has
  // nothing earlier either (only new shards, which fire from the cut-over on).
  for (int64_t minute = EpochMinuteOf(ms); minute >= EpochMinuteOf(ms) - 1; --minute) {
    if (!FiresInMinute(l, minute, shard)) return std::nullopt;
    if (LayoutSlotMs(l, minute, shard) <= ms) return minute;
  }
  return std::nullopt;  // not reached: a slot of the minute before is always <= ms
}

}  // namespace belfry
