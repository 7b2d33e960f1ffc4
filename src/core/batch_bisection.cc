#include "core/batch_bisection.h"

namespace belfry {
namespace {

// Applies [first, last); returns false iff stop was requested.
bool ApplyRangeIsolating(size_t first, size_t last, const ApplyRange& apply, BisectionResult* out) {
  if (first >= last) return true;
  ++out->applies;
  const std::optional<Status> answer = apply(first, last);
  if (!answer) return false;
  if (answer->ok()) return true;
  if (last - first == 1) {
    out->refused.push_back(RefusedItem{first, *answer});
    return true;
  }
  const size_t mid = first + (last - first) / 2;
  return ApplyRangeIsolating(first, mid, apply, out) && ApplyRangeIsolating(mid, last, apply, out);
}

}  // namespace

BisectionResult ApplyIsolatingRefusals(size_t count, const ApplyRange& apply) {
  BisectionResult out;
  out.stopped = !ApplyRangeIsolating(0, count, apply, &out);
  return out;
}

}  // namespace belfry
