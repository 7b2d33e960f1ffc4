// Job labels: a small map of strings on a job (the command's "labels"), stored as a JSON object
// and indexed, so that jobs can be listed, and later operated on in bulk, by label. The rules
// follow Kubernetes labels, which platform teams already know. See README, "Command format".
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "belfry/status.h"

namespace belfry {

inline constexpr size_t kMaxLabels = 16;
inline constexpr size_t kMaxLabelKeyBytes = 63;
inline constexpr size_t kMaxLabelValueBytes = 255;

// The "labels" field: an object of at most kMaxLabels entries; each key 1..63 bytes of
// [A-Za-z0-9._/-] starting and ending with a letter or digit, each value a string of at most 255
// bytes without control characters, no key twice. On success *canonical is the object with its
// keys sorted, minified ("{}" for an empty object). Rejects with invalid_labels.
Status ParseLabels(const simdjson::dom::element& el, std::string* canonical);

// A "key=value" term (the CLI's --label, the admin API's ?label=) split at its first '=';
// nullopt without one. The parts are views into `term`, not yet checked against the rules.
std::optional<std::pair<std::string_view, std::string_view>> SplitLabelTerm(std::string_view term);

// A label filter from "key=value" terms (the admin API's ?label=, the CLI's --label), by the
// same rules, as the canonical object a job's labels must contain. A key given twice with two
// values matches nothing; the error says so. Rejects with invalid_labels.
Status ParseLabelFilter(const std::vector<std::string>& terms, std::string* canonical);

// Ok iff `key` follows the label key rules above; else invalid_labels, saying which rule.
Status CheckLabelKey(std::string_view key);

// True iff every label of `filter` (a canonical object) is in `labels` (a canonical object; empty
// text counts as {}) with the same value: PostgreSQL's `labels @> filter`, for the test fakes.
bool LabelsContain(std::string_view labels, std::string_view filter);

}  // namespace belfry
