#include "core/json_object_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "core/message_quote.h"

namespace belfry {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Messages quote at most this many bytes of a field name.

Status Reject(std::string_view reason, std::string message) {
  return Status::Invalid(std::string(reason), std::move(message));
}

// A DOM parser per thread, limited to kMaxJsonDepth. nullptr if it cannot allocate.
simdjson::dom::parser* ThreadParser() {
  constexpr size_t kInitialCapacity = 64 * 1024;
  thread_local simdjson::dom::parser parser;
  if (parser.max_depth() != kMaxJsonDepth || parser.capacity() == 0) {
    if (parser.allocate(kInitialCapacity, kMaxJsonDepth) != simdjson::SUCCESS) return nullptr;
  }
  return &parser;
}

Status JsonError(simdjson::error_code error, std::string_view noun) {
  switch (error) {
    case simdjson::DEPTH_ERROR:
      return Reject("too_deep", fmt::format("JSON nesting is deeper than {} levels", kMaxJsonDepth));
    case simdjson::NUMBER_ERROR:
      return Reject("invalid_number",
                    "a JSON number is malformed or out of range (integers must fit in 64 bits, other numbers "
                    "in a double)");
    case simdjson::UTF8_ERROR:
      return Reject("invalid_utf8", fmt::format("{} value is not valid UTF-8", noun));
    case simdjson::EMPTY:
      return Reject("invalid_json", fmt::format("{} value is empty or only whitespace", noun));
    case simdjson::STRING_ERROR:
      return Reject("invalid_json", "a JSON string has an invalid escape or an unpaired surrogate");
    case simdjson::UNESCAPED_CHARS:
      return Reject("invalid_json", "a JSON string contains an unescaped control character");
    default:
      return Reject("invalid_json",
                    fmt::format("{} value is not JSON: {}", noun, simdjson::error_message(error)));
  }
}

}  // namespace

const char* JsonTypeName(const element& el) {
  switch (el.type()) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "an unknown type";
}

StatusOr<JsonObjectFields> JsonObjectFields::Parse(std::string_view value, const JsonObjectSchema& schema) {
  if (static_cast<int64_t>(value.size()) > schema.max_bytes) {
    return Reject("too_large", fmt::format("{} is {} bytes; the limit is {}", schema.noun, value.size(),
                                           schema.max_bytes));
  }
  if (!simdjson::validate_utf8(value.data(), value.size())) {
    return Reject("invalid_utf8", fmt::format("{} value is not valid UTF-8 (first bad byte at offset {})",
                                              schema.noun, FirstInvalidUtf8(value)));
  }

  simdjson::dom::parser* parser = ThreadParser();
  if (parser == nullptr) return Status::Retryable("out of memory allocating the JSON parser");
  element root;
  if (const simdjson::error_code error = parser->parse(value.data(), value.size(), true).get(root);
      error != simdjson::SUCCESS) {
    if (error == simdjson::MEMALLOC || error == simdjson::CAPACITY) {
      return Status::Retryable(fmt::format("JSON parser: {}", simdjson::error_message(error)));
    }
    return JsonError(error, schema.noun);
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) {
    return Reject("not_object",
                  fmt::format("{} must be a JSON object, not {}", schema.noun, JsonTypeName(root)));
  }

  JsonObjectFields fields(schema.field_names);
  for (const simdjson::dom::key_value_pair field : object) {
    const auto known = std::find(schema.field_names.begin(), schema.field_names.end(), field.key);
    if (known == schema.field_names.end()) {
      return Reject("unknown_field", fmt::format("unknown field {} (known fields: {})",
                                                 QuoteForMessage(field.key, kMaxEchoBytes),
                                                 fmt::join(schema.field_names, ", ")));
    }
    const auto index = static_cast<size_t>(known - schema.field_names.begin());
    if (fields.seen_[index]) {
      return Reject("duplicate_field", fmt::format("field \"{}\" appears more than once", *known));
    }
    fields.seen_[index] = true;
    fields.values_[index] = field.value;
  }
  return fields;
}

std::optional<element> JsonObjectFields::Get(size_t field) const {
  if (!seen_[field] || values_[field].is_null()) return std::nullopt;
  return values_[field];
}

Status JsonObjectFields::GetString(size_t field, std::optional<std::string_view>* out) const {
  const std::optional<element> el = Get(field);
  if (!el) return Status::Ok();
  std::string_view s;
  if (el->get_string().get(s) != simdjson::SUCCESS) return WrongType(field, "a string", *el);
  *out = s;
  return Status::Ok();
}

Status JsonObjectFields::WrongType(size_t field, std::string_view expected, const element& got) const {
  return Reject("wrong_type",
                fmt::format("field \"{}\" must be {}, not {}", names_[field], expected, JsonTypeName(got)));
}

}  // namespace belfry
