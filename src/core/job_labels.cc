#include "core/job_labels.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "core/json_writer.h"
#include "core/message_quote.h"

namespace belfry {
namespace {


Status Reject(std::string message) { return Status::Invalid("invalid_labels", std::move(message)); }

bool AlphaNumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

Status CheckKeyRules(std::string_view key) {
  if (key.empty() || key.size() > kMaxLabelKeyBytes) {
    return Reject(fmt::format("label key {} must be 1 to {} bytes", QuoteForMessage(key, kMaxEchoBytes),
                              kMaxLabelKeyBytes));
  }
  const bool chars_ok = std::all_of(key.begin(), key.end(), [](char c) {
    return AlphaNumeric(c) || c == '.' || c == '_' || c == '-' || c == '/';
  });
  if (!chars_ok || !AlphaNumeric(key.front()) || !AlphaNumeric(key.back())) {
    return Reject(fmt::format("label key {} must be letters, digits, '.', '_', '-' or '/', and begin and end "
                              "with a letter or digit",
                              QuoteForMessage(key, kMaxEchoBytes)));
  }
  return Status::Ok();
}

Status CheckValue(std::string_view key, std::string_view value) {
  if (value.size() > kMaxLabelValueBytes) {
    return Reject(fmt::format("label {} is {} bytes; the limit is {}", QuoteForMessage(key, kMaxEchoBytes),
                              value.size(), kMaxLabelValueBytes));
  }
  if (const std::optional<size_t> at = FirstControlChar(value)) {
    return Reject(fmt::format("label {} contains control character 0x{:02x} at byte {}",
                              QuoteForMessage(key, kMaxEchoBytes), static_cast<unsigned char>(value[*at]), *at));
  }
  return Status::Ok();
}

std::string Canonical(const std::map<std::string, std::string, std::less<>>& labels) {
  std::string out = "{";
  for (const auto& [key, value] : labels) {
    if (out.size() > 1) out.push_back(',');
    AppendJsonString(&out, key);
    out.push_back(':');
    AppendJsonString(&out, value);
  }
  out.push_back('}');
  return out;
}

}  // namespace

Status ParseLabels(const simdjson::dom::element& el, std::string* canonical) {
  simdjson::dom::object object;
  if (el.get_object().get(object) != simdjson::SUCCESS) return Reject("labels must be an object of strings");
  std::map<std::string, std::string, std::less<>> labels;
  for (const simdjson::dom::key_value_pair field : object) {
    if (Status s = CheckKeyRules(field.key); !s.ok()) return s;
    std::string_view value;
    if (field.value.get_string().get(value) != simdjson::SUCCESS) {
      return Reject(fmt::format("label {} must be a string", QuoteForMessage(field.key, kMaxEchoBytes)));
    }
    if (Status s = CheckValue(field.key, value); !s.ok()) return s;
    if (!labels.emplace(std::string(field.key), std::string(value)).second) {
      return Reject(fmt::format("label {} is given twice", QuoteForMessage(field.key, kMaxEchoBytes)));
    }
    if (labels.size() > kMaxLabels) return Reject(fmt::format("more than {} labels", kMaxLabels));
  }
  *canonical = Canonical(labels);
  return Status::Ok();
}

std::optional<std::pair<std::string_view, std::string_view>> SplitLabelTerm(std::string_view term) {
  const size_t eq = term.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  return std::pair(term.substr(0, eq), term.substr(eq + 1));
}

Status ParseLabelFilter(const std::vector<std::string>& terms, std::string* canonical) {
  std::map<std::string, std::string, std::less<>> labels;
  for (const std::string& term : terms) {
    const auto split = SplitLabelTerm(term);
    if (!split) {
      return Reject(fmt::format("label filter {} is not key=value", QuoteForMessage(term, kMaxEchoBytes)));
    }
    const auto [key, value] = *split;
    if (Status s = CheckKeyRules(key); !s.ok()) return s;
    if (Status s = CheckValue(key, value); !s.ok()) return s;
    const auto [it, added] = labels.emplace(std::string(key), std::string(value));
    if (!added && it->second != value) {
      return Reject(fmt::format("label filter gives {} two values; a job has one",
                                QuoteForMessage(key, kMaxEchoBytes)));
    }
    if (labels.size() > kMaxLabels) return Reject(fmt::format("more than {} label filters", kMaxLabels));
  }
  *canonical = Canonical(labels);
  return Status::Ok();
}

bool LabelsContain(std::string_view labels, std::string_view filter) {
  simdjson::dom::parser parser_a;
  simdjson::dom::parser parser_b;
  simdjson::dom::object have;
  simdjson::dom::object want;
  if (parser_a.parse(labels.empty() ? std::string_view("{}") : labels).get_object().get(have) != simdjson::SUCCESS ||
      parser_b.parse(filter.empty() ? std::string_view("{}") : filter).get_object().get(want) != simdjson::SUCCESS) {
    return false;
  }
  for (const simdjson::dom::key_value_pair w : want) {
    std::string_view a;
    std::string_view b;
    if (have.at_key(w.key).get_string().get(a) != simdjson::SUCCESS) return false;
    if (w.value.get_string().get(b) != simdjson::SUCCESS || a != b) return false;
  }
  return true;
}

Status CheckLabelKey(std::string_view key) { return CheckKeyRules(key); }

}  // namespace belfry
