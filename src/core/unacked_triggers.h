// UnackedTriggers: after a firing failed with broker errors, the messages of each of its queries
// that the broker did not acknowledge, kept in memory per (shard, minute range), so that this
// node's retry of the same range re-sends only those (TriggerBatch::Resend) instead of querying
// the range again and re-sending every trigger (docs/reliability.md, "Undeliverable triggers").
// Nothing is written: a takeover by another node, or a restart, re-fires the whole range.
//
// An entry is used at most once, and only when the retry covers exactly its range under the same
// layout, within `max_age_ms` of being kept; otherwise it is dropped and the retry re-queries.
// The kept bytes are bounded: a set that does not fit is not kept (the retry re-queries).
// Time comes from the injected Clock. Thread-safe: the firing workers of a node share one.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "belfry/clock.h"
#include "belfry/shard_layout.h"
#include "belfry/shard_ledger.h"
#include "belfry/trigger_sink.h"

namespace belfry {

class UnackedTriggers final {
 public:
  // Why a retry re-queries instead of re-sending what was kept (a metric label).
  static constexpr std::string_view kOverBound = "over_bound";
  static constexpr std::string_view kLayoutChanged = "layout_changed";
  static constexpr std::string_view kExpired = "expired";
  static constexpr std::string_view kRangeChanged = "range_changed";
  static constexpr std::string_view kClaimLost = "claim_lost";
  static constexpr std::string_view kUntracked = "untracked";

  UnackedTriggers(const Clock& clock, int64_t max_bytes = 64ll << 20, int64_t max_age_ms = 15 * 60 * 1000)
      : clock_(clock), max_bytes_(max_bytes), max_age_ms_(max_age_ms) {}
  UnackedTriggers(const UnackedTriggers&) = delete;
  UnackedTriggers& operator=(const UnackedTriggers&) = delete;

  // Keeps `unacked`, every message of the query of `shard` over `range` (fired under `layout`)
  // that was not acknowledged (empty: all were). Replaces an entry for the same key. Returns
  // false, keeping nothing for the key, when it would take the kept bytes over the bound.
  // REQUIRES: `unacked` is complete (TriggerBatch::Failures() of a batch that tracked them all).
  bool Keep(int32_t shard, const MinuteRange& range, const ShardLayout& layout,
            std::vector<TriggerFailure> unacked);

  // The entry kept for exactly (`shard`, `range`) under `layout`, removed from memory; nullopt
  // when there is none or it cannot be used (then `*why`, if given, says why, and the entry is
  // dropped). Drops as well every other entry of `shard` whose range overlaps `range`: the
  // range is being fired another way.
  std::optional<std::vector<TriggerFailure>> Take(int32_t shard, const MinuteRange& range, const ShardLayout& layout,
                                                  std::string_view* why = nullptr);

  // Drops every entry of `shard`: another node holds or took its claim, and may fire it. Returns
  // how many were dropped.
  int64_t DropShard(int32_t shard);

  int64_t bytes() const;
  int64_t entries() const;

 private:
  struct Entry {
    ShardLayout layout;
    EpochMs kept_at = 0;
    int64_t bytes = 0;
    std::vector<TriggerFailure> unacked;
  };
  using Key = std::pair<int32_t, std::pair<int64_t, int64_t>>;  // shard, (first, last)
  void EraseLocked(std::map<Key, Entry>::iterator it);

  const Clock& clock_;
  const int64_t max_bytes_;
  const int64_t max_age_ms_;
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;  // guarded by mu_
  int64_t bytes_ = 0;             // guarded by mu_
};

}  // namespace belfry
