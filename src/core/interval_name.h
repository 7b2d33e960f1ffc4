// project44's executionInterval names.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace belfry {

// EVERY_MINUTE -> 1, EVERY_<N>_MINUTES -> N, EVERY_HOUR -> 60, EVERY_<N>_HOURS -> 60*N.
// nullopt for anything else (including N <= 0, leading zeros, or overflow). Does not check
// the configured interval set.
std::optional<int32_t> ParseExecutionInterval(std::string_view name);

}  // namespace belfry
