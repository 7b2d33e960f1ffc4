#include "loadtest/weight_list.h"

#include <algorithm>
#include <stdexcept>

namespace belfry::loadtest {

std::vector<NamedWeight> ParseWeightList(const std::string& text, const std::string& flag,
                                         const std::vector<std::string>& names) {
  std::vector<NamedWeight> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string entry = text.substr(start, comma - start);
    start = comma + 1;
    const size_t colon = entry.find(':');
    if (colon == std::string::npos)
      throw std::invalid_argument(flag + " entry '" + entry + "' is not NAME:WEIGHT");
    NamedWeight w{entry.substr(0, colon), -1};
    size_t used = 0;
    try {
      w.weight = std::stod(entry.substr(colon + 1), &used);
    } catch (const std::exception&) {
    }
    if (used != entry.size() - colon - 1 || !(w.weight >= 0)) {
      throw std::invalid_argument(flag + " entry '" + entry + "': want a weight >= 0");
    }
    if (std::find(names.begin(), names.end(), w.name) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw std::invalid_argument(flag + ": unknown name '" + w.name + "' (" + known + ")");
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace belfry::loadtest
