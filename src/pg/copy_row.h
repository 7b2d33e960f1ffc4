// CopyRow: one row of a COPY into a staging table, as text fields in the table's column order,
// with NULLs. Fields() gives what pqxx::stream_to takes (nullptr is NULL).
//
// PgJobStore stages its upserts with it, PgExecutionStore its reports and counters.
#pragma once

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace belfry {

template <size_t N>
class CopyRow final {
 public:
  static constexpr size_t kColumns = N;

  void Set(size_t column, std::string_view value) { values_[column].assign(value); }
  void SetInt(size_t column, int64_t v) { values_[column] = std::to_string(v); }
  void SetOptionalInt(size_t column, std::optional<int64_t> v) {
    if (v) {
      SetInt(column, *v);
    } else {
      null_.set(column);
    }
  }
  void SetNull(size_t column) { null_.set(column); }
  void SetBool(size_t column, bool v) { values_[column] = v ? "t" : "f"; }
  void SetOptionalBool(size_t column, std::optional<bool> v) {
    if (v) {
      SetBool(column, *v);
    } else {
      null_.set(column);
    }
  }

  // Pointers into this row (nullptr for NULL), valid while it lives unchanged.
  std::array<const char*, N> Fields() const {
    std::array<const char*, N> out{};
    for (size_t i = 0; i < N; ++i) out[i] = null_.test(i) ? nullptr : values_[i].c_str();
    return out;
  }

 private:
  std::array<std::string, N> values_;
  std::bitset<N> null_;
};

}  // namespace belfry
