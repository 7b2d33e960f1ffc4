// LayoutCell: the shard layout a node currently knows (core/shard_layout.h), shared by its ticker
// and its firing workers. Claims bring the layout they were made under, and a periodic read
// brings it too; whichever is newer wins (docs/resharding.md, "A claim refuses a minute of the
// wrong layout"). Thread-safe.
#pragma once

#include <mutex>

#include "core/shard_layout.h"

namespace belfry {

class LayoutCell final {
 public:
  explicit LayoutCell(ShardLayout initial) : layout_(initial) {}

  ShardLayout Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return layout_;
  }

  // Takes `seen` unless it is older than what the cell holds: a reshard only moves forward
  // (stable -> moving, moved_through up -> cutover -> stable at the new count).
  void Offer(const ShardLayout& seen) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!IsOlder(seen, layout_)) layout_ = seen;
  }

  // Whether `a` comes before `b` in a reshard's progress.
  static bool IsOlder(const ShardLayout& a, const ShardLayout& b) {
    const int32_t a_count = a.phase == ShardLayout::Phase::kStable ? a.from : a.to;
    const int32_t b_count = b.phase == ShardLayout::Phase::kStable ? b.from : b.to;
    if (a.from != b.from) return a.from < b.from;  // b is a later reshard's record
    if (a_count != b_count) return a_count < b_count;
    if (a.phase != b.phase) return static_cast<int>(a.phase) < static_cast<int>(b.phase);
    return a.moved_through < b.moved_through;
  }

 private:
  mutable std::mutex mu_;
  ShardLayout layout_;
};

}  // namespace belfry
