// WeightList: a flag value of the form "NAME:WEIGHT,NAME:WEIGHT,..." (crud's --ops, verify's
// --churn-mix).
#pragma once

#include <string>
#include <vector>

namespace belfry::loadtest {

struct NamedWeight {
  std::string name;
  double weight = 0;
};

// The entries in order. Throws std::invalid_argument, naming `flag`, on an entry without a
// colon, a weight that is not a number >= 0, or a name not in `names`.
std::vector<NamedWeight> ParseWeightList(const std::string& text, const std::string& flag,
                                         const std::vector<std::string>& names);

}  // namespace belfry::loadtest
