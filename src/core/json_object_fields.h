// JsonObjectFields: the known fields of a Kafka message value that must be one JSON object, read
// under the rules every such message shares. Commands (core/command_parser) and execution reports
// (core/execution_report) both read their values through it, so their size, UTF-8, nesting,
// field and type rules, and the reasons and messages they reject with, are one implementation.
// See docs/command-validation.md, "Order of checks".
#pragma once

#include <simdjson.h>

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "belfry/status.h"

namespace belfry {

// The deepest JSON nesting belfry parses, counting the top-level object as level 1.
inline constexpr size_t kMaxJsonDepth = 32;

// What one kind of message looks like.
struct JsonObjectSchema {
  std::string_view noun;                          // names the message in rejections: "command", "report"
  std::span<const std::string_view> field_names;  // REQUIRES: at most JsonObjectFields::kMaxFields,
                                                  // outliving every JsonObjectFields parsed with it
  int64_t max_bytes = 0;                          // the whole value
};

// "an array", "an object", "a number", "a string", "a boolean" or "null", for messages.
const char* JsonTypeName(const simdjson::dom::element& el);

class JsonObjectFields final {
 public:
  static constexpr size_t kMaxFields = 32;

  // Parses `value` and collects its fields. The first rule that fails decides the rejection
  // (Status::Invalid with these reasons):
  //   too_large        value is over schema.max_bytes (checked before parsing)
  //   invalid_utf8     value is not valid UTF-8
  //   invalid_json     empty, truncated, trailing garbage, a bad escape or unescaped control char
  //   invalid_number   a number does not fit a 64-bit integer or a double
  //   too_deep         nesting is deeper than kMaxJsonDepth
  //   not_object       the top level is not an object
  //   unknown_field    a field not in schema.field_names (the first, in document order)
  //   duplicate_field  a field given twice, even when one copy is null
  // Returns Status::Retryable if the parser cannot allocate memory; the value was not judged.
  // Never throws. Thread-safe: each thread has its own parser, and the fields point into it, so
  // they are valid only until the next Parse on the same thread.
  static StatusOr<JsonObjectFields> Parse(std::string_view value, const JsonObjectSchema& schema);

  // The field's value; nullopt when it is absent or JSON null. REQUIRES: field < number of names.
  std::optional<simdjson::dom::element> Get(size_t field) const;

  // Ok and sets *out to the string (*out unchanged when absent or null), or wrong_type.
  Status GetString(size_t field, std::optional<std::string_view>* out) const;

  // The wrong_type rejection: field "<name>" must be <expected>, not <JsonTypeName(got)>.
  Status WrongType(size_t field, std::string_view expected, const simdjson::dom::element& got) const;

  std::string_view name(size_t field) const { return names_[field]; }

 private:
  explicit JsonObjectFields(std::span<const std::string_view> names) : names_(names) {}

  std::span<const std::string_view> names_;
  std::array<simdjson::dom::element, kMaxFields> values_{};
  std::bitset<kMaxFields> seen_;
};

}  // namespace belfry
