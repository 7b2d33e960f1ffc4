// Job owner: the free-form "owner" of a job (an upsert's field, a bulk selector's term, the
// listing's filter). One rule for all of them.
#pragma once

#include <cstddef>
#include <string_view>

#include "belfry/status.h"

namespace belfry {

inline constexpr size_t kMaxOwnerBytes = 255;

// Ok iff `owner` is at most kMaxOwnerBytes without control characters; else invalid_owner.
Status CheckOwner(std::string_view owner);

}  // namespace belfry
