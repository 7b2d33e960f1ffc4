#include "core/bulk_selector.h"

#include <fmt/format.h>

#include "core/job_labels.h"
#include "core/job_owner.h"
#include "core/json_writer.h"
#include "core/message_quote.h"

namespace belfry {
namespace {

Status Reject(std::string message) { return Status::Invalid("invalid_selector", std::move(message)); }

}  // namespace

Status ParseBulkSelector(const simdjson::dom::element& el, BulkSelector* out) {
  simdjson::dom::object object;
  if (el.get_object().get(object) != simdjson::SUCCESS) {
    return Reject("selector must be an object with owner and/or labels");
  }
  BulkSelector selector;
  bool seen_owner = false;
  bool seen_labels = false;
  for (const simdjson::dom::key_value_pair field : object) {
    if (field.key == "owner") {
      std::string_view owner;
      if (seen_owner) return Reject("selector gives owner twice");
      seen_owner = true;
      if (field.value.get_string().get(owner) != simdjson::SUCCESS) return Reject("selector owner must be a string");
      if (owner.empty()) return Reject("selector owner is empty; omit it to match any owner");
      if (Status s = CheckOwner(owner); !s.ok()) return s;
      selector.owner = std::string(owner);
    } else if (field.key == "labels") {
      if (seen_labels) return Reject("selector gives labels twice");
      seen_labels = true;
      std::string canonical;
      if (Status s = ParseLabels(field.value, &canonical); !s.ok()) return s;
      if (canonical != "{}") selector.labels_json = std::move(canonical);
    } else {
      return Reject(fmt::format("selector field {} is not one of owner, labels", QuoteForMessage(field.key)));
    }
  }
  if (!selector.owner && selector.labels_json.empty()) {
    return Reject("selector matches every job; it needs an owner or at least one label");
  }
  *out = std::move(selector);
  return Status::Ok();
}

std::string EncodeBulkSelector(const BulkSelector& selector) {
  std::string out = "{";
  if (selector.owner) {
    out.append("\"owner\":");
    AppendJsonString(&out, *selector.owner);
  }
  if (!selector.labels_json.empty()) {
    if (selector.owner) out.push_back(',');
    out.append("\"labels\":").append(selector.labels_json);
  }
  out.push_back('}');
  return out;
}

bool BulkSelectorMatches(const BulkSelector& selector, std::string_view owner, std::string_view labels_json) {
  if (selector.owner && *selector.owner != owner) return false;
  return selector.labels_json.empty() || LabelsContain(labels_json, selector.labels_json);
}

}  // namespace belfry
