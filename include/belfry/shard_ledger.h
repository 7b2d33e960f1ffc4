// ShardLedger: the per-shard bookkeeping that says which shard-minutes were fired and which
// node is firing a shard right now. Implemented by PgShardLedger (src/pg) and FakeShardLedger.
//
// Two leases per shard: the claim (on-time firings, which move the watermark fired_through) and
// the debt lease (debt firings, which drain the missed minutes owed). They are independent, so a
// node fires a shard's present and its debt at once. The invariant: every minute <=
// fired_through that is not in the debt has been fired (docs/catch-up.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/clock.h"
#include "belfry/shard_layout.h"
#include "belfry/status.h"

namespace belfry {

struct ShardClaim {
  bool claimed = false;
  // The last minute recorded as fired for the shard before this claim; nullopt for a shard that
  // has never fired.
  std::optional<int64_t> fired_through;
  // A position in the store's write log taken before the claim: a read of the shard's due jobs
  // that sees every write up to it sees every job committed before the claim (a hot standby is
  // fenced by it: docs/hot-standby.md). 0 when the store has none.
  int64_t read_fence = 0;
  // The layout record as the claim read it: the firing plans the minute with it, whatever the
  // node believed when it ticked (docs/resharding.md). Stable at the ledger's shard count when
  // the store has no record.
  ShardLayout layout;
};

// An inclusive range of epoch minutes; empty when last < first.
struct MinuteRange {
  int64_t first = 0;
  int64_t last = -1;
  bool empty() const { return last < first; }
  int64_t size() const { return empty() ? 0 : last - first + 1; }
};

struct DebtClaim {
  bool claimed = false;
  // The lowest contiguous range of the debt when claimed (never empty when claimed).
  MinuteRange lowest;
  int64_t owed_minutes = 0;  // the whole debt's size, all ranges
  int64_t read_fence = 0;    // as ShardClaim::read_fence
  ShardLayout layout;        // as ShardClaim::layout
};

struct ShardState {
  int32_t shard = 0;
  std::optional<int64_t> fired_through;
  std::string claim_node;           // empty when unclaimed
  std::optional<EpochMs> claim_until;  // lease expiry, by the database's clock
  bool claim_live = false;          // claim_until is in the future by the database's clock
  int64_t debt_minutes = 0;         // missed minutes owed (not yet fired), all ranges
  std::optional<int64_t> debt_first;  // the oldest minute owed
  std::string debt_node;              // node holding the debt lease; empty when none
  bool debt_live = false;             // the debt lease is live by the database's clock
};

class ShardLedger {
 public:
  virtual ~ShardLedger() = default;

  // Atomically claims `shard` for `node` for `lease_ms` (measured by the database's clock) iff
  // fired_through < up_to_minute (or never fired) and no other live claim exists.
  virtual StatusOr<ShardClaim> Claim(int32_t shard, int64_t up_to_minute, const std::string& node,
                                     int64_t lease_ms) = 0;

  // Records `minute` as fired (fired_through = minute, never moving backwards) and renews the
  // lease, or releases the claim when `release` is true. Fails with FailedPrecondition when
  // `node` no longer holds the claim.
  virtual Status MarkFired(int32_t shard, int64_t minute, const std::string& node, int64_t lease_ms,
                           bool release) = 0;

  // The end of an on-time firing, in one atomic step: fired_through = minute (never moving
  // backwards), `add_debt` (minutes > the old fired_through that were missed and are owed; may be
  // empty) added to the debt, and the claim released. FailedPrecondition when `node` no longer
  // holds the claim (then nothing changes).
  virtual Status Advance(int32_t shard, int64_t minute, const MinuteRange& add_debt,
                         const std::string& node) = 0;

  // Releases the claim without recording anything (after a failed firing).
  virtual Status Release(int32_t shard, const std::string& node) = 0;

  // Atomically takes the debt lease of `shard` for `node` for `lease_ms` iff the debt is not
  // empty and no other node holds a live debt lease. On success, reports the lowest range owed.
  virtual StatusOr<DebtClaim> ClaimDebt(int32_t shard, const std::string& node, int64_t lease_ms) = 0;
  // Renews the debt lease. FailedPrecondition when `node` no longer holds it.
  virtual Status RenewDebt(int32_t shard, const std::string& node, int64_t lease_ms) = 0;
  // Removes `paid` from the debt and releases the debt lease, in one step. FailedPrecondition
  // when `node` no longer holds the debt lease (then nothing changes).
  virtual Status SettleDebt(int32_t shard, const MinuteRange& paid, const std::string& node) = 0;
  // Releases the debt lease without settling anything (after a failed debt firing). A no-op
  // when `node` does not hold it.
  virtual Status ReleaseDebt(int32_t shard, const std::string& node) = 0;

  virtual StatusOr<std::vector<ShardState>> LoadStates() = 0;

  // The shard layout record as it stands (docs/resharding.md): which shard and tick fire each
  // job. Every reader that shows slots, lag or load takes the layout from here, never from the
  // node's configured shard_count (a reshard changes it under a running node).
  virtual StatusOr<ShardLayout> ReadLayout() = 0;
};

}  // namespace belfry
