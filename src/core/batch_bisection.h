// BatchBisection: isolates the items of a batch that the store refuses for good, so that the
// rest applies and the partition behind the batch moves on (docs/reliability.md, "Poison commands
// and reports").
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "belfry/status.h"

namespace belfry {

// A store error that no retry can cure: the store refused the data itself (Code::kInvalid, e.g.
// PostgreSQL's data and integrity errors or a trigger's RAISE). Every other error is retried as a
// whole batch (retryable faults, and a database in the wrong state: FailedPrecondition).
inline bool IsPermanentStoreError(const Status& s) { return s.code() == Status::Code::kInvalid; }

// Applies items [first, last) of the batch in one store transaction, retrying retryable faults
// itself, and returns its final answer: Ok (applied), a permanent error (refused, nothing
// applied), or nullopt when stop was requested before the store answered.
using ApplyRange = std::function<std::optional<Status>(size_t first, size_t last)>;

struct RefusedItem {
  size_t index = 0;  // into the batch
  Status status;     // the store's permanent error for that item alone
};

struct BisectionResult {
  bool stopped = false;             // stop came first: the caller must not commit the batch
  std::vector<RefusedItem> refused;  // ascending by index; every other item is applied
  int32_t applies = 0;              // apply calls made (1 when nothing was refused)
};

// Applies items [0, count): the whole batch first; when the store refuses it for good, each half
// in turn, down to single items. An item refused alone is the culprit; everything else is applied,
// in batch order (a refused range's left half before its right). One culprit among n items costs
// about 2·log2(n) applies. `apply` decides what is worth retrying; any non-Ok answer it returns
// counts as a refusal of the whole range.
BisectionResult ApplyIsolatingRefusals(size_t count, const ApplyRange& apply);

}  // namespace belfry
