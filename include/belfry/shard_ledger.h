// ShardLedger: the per-shard bookkeeping that says which shard-minutes were fired and which
// node is firing a shard right now. Implemented by PgShardLedger (src/pg) and FakeShardLedger.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/clock.h"
#include "belfry/status.h"

namespace belfry {

struct ShardClaim {
  bool claimed = false;
  // The last minute recorded as fired for the shard before this claim; nullopt for a shard that
  // has never fired.
  std::optional<int64_t> fired_through;
};

struct ShardState {
  int32_t shard = 0;
  std::optional<int64_t> fired_through;
  std::string claim_node;           // empty when unclaimed
  std::optional<EpochMs> claim_until;  // lease expiry, by the database's clock
  bool claim_live = false;          // claim_until is in the future by the database's clock
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

  // Releases the claim without recording anything (after a failed firing).
  virtual Status Release(int32_t shard, const std::string& node) = 0;

  virtual StatusOr<std::vector<ShardState>> LoadStates() = 0;
};

}  // namespace belfry
