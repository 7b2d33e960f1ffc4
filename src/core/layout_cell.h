// LayoutCell: the shard layout a node currently knows (core/shard_layout.h), shared by its ticker
// and its firing workers. Claims bring the layout they were made under, and a periodic read
// brings it too; whichever is newer wins (docs/resharding.md, "A claim refuses a minute of the
// wrong layout"). Thread-safe. `on_change`, if given, is called with each layout the cell takes
// that differs from the one it held (outside the lock, on the offering thread): the node logs it.
#pragma once

#include <functional>
#include <mutex>
#include <utility>

#include "core/shard_layout.h"

namespace belfry {

class LayoutCell final {
 public:
  using ChangeFn = std::function<void(const ShardLayout&)>;

  explicit LayoutCell(ShardLayout initial, ChangeFn on_change = {})
      : layout_(initial), on_change_(std::move(on_change)) {}

  ShardLayout Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return layout_;
  }

  // Takes `seen` unless it is older than what the cell holds: a reshard only moves forward
  // (stable -> moving, moved_through up -> cutover -> stable at the new count).
  void Offer(const ShardLayout& seen) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (IsOlder(seen, layout_) || seen == layout_) return;
      layout_ = seen;
    }
    if (on_change_) on_change_(seen);
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
  const ChangeFn on_change_;
};

}  // namespace belfry
