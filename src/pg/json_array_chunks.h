// JsonArrayChunks: builds the JSON array parameters of set-based statements
// (json_to_recordset($1::json)), split into chunks of bounded size.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_writer.h"

namespace belfry {

// Upper bound on one JSON parameter. A batch of large jobs (details may be 64 KiB each) is split
// into several executions of the same statements, inside the same transaction, so that no single
// parameter or parse holds hundreds of megabytes.
inline constexpr size_t kMaxJsonChunkBytes = 8 << 20;

class JsonArrayChunks final {
 public:
  // Starts an object; add its fields with String(), Int(), ..., then call EndObject().
  void BeginObject() {
    if (current_.size() >= kMaxJsonChunkBytes) Flush();
    current_.push_back(current_.empty() ? '[' : ',');
    current_.push_back('{');
    first_field_ = true;
  }
  void EndObject() { current_.push_back('}'); }

  void String(const char* name, std::string_view v) {
    Name(name);
    AppendJsonString(&current_, v);
  }
  void Int(const char* name, int64_t v) {
    Name(name);
    current_ += std::to_string(v);
  }
  void OptionalInt(const char* name, const std::optional<int64_t>& v) {
    Name(name);
    current_ += v ? std::to_string(*v) : "null";
  }
  void Bool(const char* name, bool v) {
    Name(name);
    current_ += v ? "true" : "false";
  }
  void Double(const char* name, double v) {
    Name(name);
    current_ += fmt::format("{}", v);  // shortest text that reads back as v
  }
  void OptionalBool(const char* name, const std::optional<bool>& v) {
    Name(name);
    current_ += v ? (*v ? "true" : "false") : "null";
  }

  std::vector<std::string> Finish() {
    Flush();
    return std::move(chunks_);
  }

 private:
  void Name(const char* name) {
    if (!first_field_) current_.push_back(',');
    first_field_ = false;
    current_.push_back('"');
    current_ += name;
    current_ += "\":";
  }
  void Flush() {
    if (current_.empty()) return;
    current_.push_back(']');
    chunks_.push_back(std::move(current_));
    current_.clear();
  }

  std::string current_;
  bool first_field_ = true;
  std::vector<std::string> chunks_;
};

}  // namespace belfry
