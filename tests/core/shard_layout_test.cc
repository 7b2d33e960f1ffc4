#include "core/shard_layout.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/shard_hash.h"

namespace belfry {
namespace {

using Phase = ShardLayout::Phase;

TEST(ShardLayoutTest, AReshardGoesToAMultipleThatTicksInWholeMilliseconds) {
  EXPECT_TRUE(ValidateReshard(120, 240).ok());
  EXPECT_TRUE(ValidateReshard(120, 480).ok());
  EXPECT_TRUE(ValidateReshard(240, 480).ok());
  EXPECT_TRUE(ValidateReshard(120, 6000).ok());  // 10 ms
  for (auto [from, to] : std::vector<std::pair<int, int>>{
           {120, 120}, {120, 60}, {120, 180}, {120, 7200}, {120, 840}, {0, 240}}) {
    Status st = ValidateReshard(from, to);
    EXPECT_FALSE(st.ok()) << from << " -> " << to;
    EXPECT_EQ(st.code(), Status::Code::kInvalid);
  }
  // 840 is a multiple of 120, but 60000 / 840 is not a whole number of ms.
  EXPECT_NE(ValidateReshard(120, 840).message().find("whole ticks"), std::string::npos);
}

TEST(ShardLayoutTest, TheRecordRoundTripsAndRejectsInconsistentOnes) {
  for (const ShardLayout& l : {ShardLayout{120, 0, Phase::kStable, -1, 0}, ShardLayout{120, 240, Phase::kMoving, 57, 0},
                               ShardLayout{120, 240, Phase::kCutover, 119, 29'930'000}}) {
    StatusOr<ShardLayout> back = ParseShardLayout(EncodeShardLayout(l));
    ASSERT_TRUE(back.ok()) << EncodeShardLayout(l) << ": " << back.status().ToString();
    EXPECT_EQ(back->from, l.from);
    EXPECT_EQ(back->to, l.to);
    EXPECT_EQ(back->phase, l.phase);
    EXPECT_EQ(back->moved_through, l.moved_through);
    EXPECT_EQ(back->cutover_minute, l.cutover_minute);
  }
  EXPECT_EQ(EncodeShardLayout(ShardLayout{}), "{\"from\":120}");
  for (const char* bad : {
           "", "[]", "{}", "{\"from\":0}", "{\"from\":120,\"extra\":1}",
           R"({"from":120,"to":180,"phase":"moving","movedThrough":-1,"cutoverMinute":0})",
           R"({"from":120,"to":240,"phase":"walking","movedThrough":-1,"cutoverMinute":0})",
           R"({"from":120,"to":240,"phase":"moving","movedThrough":120,"cutoverMinute":0})",
           R"({"from":120,"to":240,"phase":"moving","movedThrough":3,"cutoverMinute":5})",
           R"({"from":120,"to":240,"phase":"cutover","movedThrough":100,"cutoverMinute":5})",
           R"({"from":120,"to":240,"phase":"cutover","movedThrough":119,"cutoverMinute":0})",
           R"({"from":120,"to":240,"phase":"moving","movedThrough":3})",
       }) {
    EXPECT_FALSE(ParseShardLayout(bad).ok()) << bad;
  }
}

TEST(ShardLayoutTest, FiringSwitchesLayoutAtTheCutOverMinute) {
  const ShardLayout l{120, 240, Phase::kCutover, 119, 1000};
  EXPECT_EQ(FiringLayout(l, 999).shard_count, 120);
  EXPECT_EQ(FiringLayout(l, 999).tick_ms, 500);
  EXPECT_EQ(FiringLayout(l, 1000).shard_count, 240);
  EXPECT_EQ(FiringLayout(l, 1000).tick_ms, 250);
  EXPECT_EQ(FiringLayout(ShardLayout{120, 240, Phase::kMoving, 119, 0}, 5000).shard_count, 120);
  // A catch-up range is cut at the cut-over, never across it.
  EXPECT_EQ(LastMinuteOfSameLayout(l, 990, 1005), 999);
  EXPECT_EQ(LastMinuteOfSameLayout(l, 1000, 1005), 1005);
  EXPECT_EQ(LastMinuteOfSameLayout(l, 990, 999), 999);
  EXPECT_EQ(LastMinuteOfSameLayout(ShardLayout{120, 240, Phase::kMoving, 3, 0}, 990, 1005), 1005);
}

// The protocol's core claim (docs/resharding.md, "The exactly-once argument"): in every state of
// a reshard, for every minute, each job is selected by exactly one firing shard's due query, and
// that shard is the job's own under the minute's firing layout, so it fires at its own slot.
void ExpectEachJobSelectedOnce(const ShardLayout& l, int64_t minute, const std::vector<std::string>& ids) {
  const MinuteLayout firing = FiringLayout(l, minute);
  std::vector<std::vector<int32_t>> selected_by(static_cast<size_t>(6000));  // stored shard -> firing shards
  for (int32_t x = 0; x < firing.shard_count; ++x) {
    for (int32_t stored : StoredShardsOf(l, minute, x)) selected_by.at(static_cast<size_t>(stored)).push_back(x);
  }
  for (const std::string& id : ids) {
    const std::vector<int32_t>& by = selected_by.at(static_cast<size_t>(StoredShard(id, l)));
    ASSERT_EQ(by.size(), 1u) << id << " in " << EncodeShardLayout(l) << " minute " << minute;
    EXPECT_EQ(by[0], ShardForId(id, firing.shard_count)) << id << " in " << EncodeShardLayout(l);
  }
}

TEST(ShardLayoutTest, EveryJobIsSelectedByExactlyOneFiringInEveryStateOfAReshard) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3000; ++i) ids.push_back("job-" + std::to_string(i * 7919));
  for (auto [from, to] : std::vector<std::pair<int32_t, int32_t>>{{120, 240}, {120, 360}, {240, 480}}) {
    SCOPED_TRACE(std::to_string(from) + " -> " + std::to_string(to));
    const int64_t c = 29'930'000;
    ExpectEachJobSelectedOnce(ShardLayout{from, 0, Phase::kStable, -1, 0}, c - 5, ids);
    for (int32_t moved = -1; moved < from; moved += (moved < 3 ? 1 : 17)) {
      ExpectEachJobSelectedOnce(ShardLayout{from, to, Phase::kMoving, moved, 0}, c - 5, ids);
    }
    ExpectEachJobSelectedOnce(ShardLayout{from, to, Phase::kMoving, from - 1, 0}, c - 5, ids);
    for (int64_t m : {c - 2, c - 1, c, c + 1}) {
      ExpectEachJobSelectedOnce(ShardLayout{from, to, Phase::kCutover, from - 1, c}, m, ids);
    }
    ExpectEachJobSelectedOnce(ShardLayout{to, 0, Phase::kStable, -1, 0}, c + 5, ids);
  }
}

// The negative control: a firing under the old layout that read only its own partition during a
// move would miss the jobs already moved; the check above would catch it.
TEST(ShardLayoutTest, ReadingOnlyTheOwnPartitionDuringAMoveWouldMissMovedJobs) {
  const ShardLayout moving{120, 240, Phase::kMoving, 60, 0};
  int missed = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string id = "job-" + std::to_string(i);
    const int32_t x = ShardForId(id, 120);
    if (StoredShard(id, moving) != x) ++missed;  // not in partition x
  }
  EXPECT_GT(missed, 300);  // about a quarter: half of the moved half
  EXPECT_EQ(StoredShardsOf(moving, 5, 7), (std::vector<int32_t>{7, 127}));
  EXPECT_EQ(StoredShardsOf(ShardLayout{120, 360, Phase::kMoving, 60, 0}, 5, 7), (std::vector<int32_t>{7, 127, 247}));
}

// The ticker's order across the cut-over: minute C-1 has 120 slots 500 ms apart, minute C has
// 240 slots 250 ms apart, every (minute, shard) of each minute's layout comes exactly once, in
// time order, and no gap is longer than the old tick.
TEST(ShardLayoutTest, TheTickerOrderSwitchesTicksAtTheCutOver) {
  const int64_t c = 29'930'000;
  const ShardLayout l{120, 240, Phase::kCutover, 119, c};
  SlotRef slot = FirstLayoutSlotAtOrAfter(l, (c - 1) * 60'000 + 1);
  EXPECT_EQ(slot.minute, c - 1);
  EXPECT_EQ(slot.shard, 1);
  std::map<int64_t, int> per_minute;
  EpochMs last = LayoutSlotMs(l, slot.minute, slot.shard) - 1;
  while (slot.minute <= c + 1) {
    const EpochMs at = LayoutSlotMs(l, slot.minute, slot.shard);
    ASSERT_GT(at, last) << slot.minute << "/" << slot.shard;
    ASSERT_LE(at - last, 500) << slot.minute << "/" << slot.shard;
    ++per_minute[slot.minute];
    last = at;
    slot = NextLayoutSlot(l, slot);
  }
  EXPECT_EQ(per_minute[c - 1], 119);  // from shard 1
  EXPECT_EQ(per_minute[c], 240);
  EXPECT_EQ(per_minute[c + 1], 240);
  // The first slot of the cut-over minute is shard 0 of the new layout, even from late in C-1.
  slot = FirstLayoutSlotAtOrAfter(l, (c - 1) * 60'000 + 59'600);
  EXPECT_EQ(slot.minute, c);
  EXPECT_EQ(slot.shard, 0);
  slot = FirstLayoutSlotAtOrAfter(l, c * 60'000 + 1);
  EXPECT_EQ(slot.minute, c);
  EXPECT_EQ(slot.shard, 1);
  EXPECT_EQ(LayoutSlotMs(l, c, 1), c * 60'000 + 250);
}

TEST(ShardLayoutTest, ANewShardHasNoSlotBeforeTheCutOver) {
  const int64_t c = 29'930'000;
  const ShardLayout l{120, 240, Phase::kCutover, 119, c};
  EXPECT_FALSE(FiresInMinute(l, c - 1, 130));
  EXPECT_TRUE(FiresInMinute(l, c, 130));
  EXPECT_EQ(LastLayoutSlotMinuteAtOrBefore(l, c * 60'000 + 10'000, 130), std::nullopt);  // its slot is at 32.5 s
  EXPECT_EQ(LastLayoutSlotMinuteAtOrBefore(l, c * 60'000 + 32'500, 130), c);
  EXPECT_EQ(LastLayoutSlotMinuteAtOrBefore(l, (c - 1) * 60'000 + 30'000, 130), std::nullopt);
  // An old shard: in C its slot moved from 3.5 s to 1.75 s.
  EXPECT_EQ(LastLayoutSlotMinuteAtOrBefore(l, c * 60'000 + 1'000, 7), c - 1);
  EXPECT_EQ(LastLayoutSlotMinuteAtOrBefore(l, c * 60'000 + 1'750, 7), c);
  EXPECT_EQ(LastLayoutSlotMinuteAtOrBefore(l, (c - 1) * 60'000 + 3'499, 7), c - 2);
  // Without a reshard it is slot_math's answer.
  const ShardLayout stable{};
  for (EpochMs t : {c * 60'000, c * 60'000 + 3'500, c * 60'000 + 59'999}) {
    EXPECT_EQ(LastLayoutSlotMinuteAtOrBefore(stable, t, 7), LastSlotMinuteAtOrBefore(t, 7, 500)) << t;
  }
}

// A retry's minute (or any one-shot row's) is the first whose slot of its firing shard, with
// that minute's tick, is at or after its time.
TEST(ShardLayoutTest, ARowsFirstMinuteFollowsItsFiringShardAndTick) {
  const int64_t c = 29'930'000;
  const ShardLayout l{120, 240, Phase::kCutover, 119, c};
  // Stored in 130 (old shard 10): before C it fires at 5 s (old shard 10), from C at 32.5 s.
  EXPECT_EQ(FirstLayoutMinuteAtOrAfter(l, (c - 1) * 60'000 + 5'000, 130), c - 1);
  EXPECT_EQ(FirstLayoutMinuteAtOrAfter(l, (c - 1) * 60'000 + 5'001, 130), c);
  EXPECT_EQ(FirstLayoutMinuteAtOrAfter(l, c * 60'000 + 32'500, 130), c);
  EXPECT_EQ(FirstLayoutMinuteAtOrAfter(l, c * 60'000 + 32'501, 130), c + 1);
  EXPECT_EQ(FiringShardRow(l, c - 1, 130), 10);
  EXPECT_EQ(FiringShardRow(l, c, 130), 130);
  // Without a reshard, as retry_policy's FirstMinuteAtOrAfter.
  for (EpochMs t : {c * 60'000, c * 60'000 + 3'500, c * 60'000 + 3'501}) {
    EXPECT_EQ(FirstLayoutMinuteAtOrAfter(ShardLayout{}, t, 7), c + (t > c * 60'000 + 3'500 ? 1 : 0)) << t;
  }
}

}  // namespace
}  // namespace belfry
