// Invariants shared by the libFuzzer targets in tests/fuzz: a violation traps, which libFuzzer
// reports as a crash with the input that caused it.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <string_view>

#include "belfry/status.h"

namespace belfry::fuzz {

inline void Check(bool condition) {
  if (!condition) __builtin_trap();
}

inline bool HasControlChar(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b < 0x20 || b == 0x7f;
  });
}

inline bool IsUtf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

// Every rejection: kInvalid, a reason, and a short message that is valid UTF-8 with no control
// characters (user input is echoed through core/message_quote, at most ~100 bytes of it).
inline void CheckRejection(const Status& status) {
  Check(status.code() == Status::Code::kInvalid);
  Check(!status.reason().empty());
  Check(!status.message().empty());
  Check(status.message().size() < 1024);
  Check(!HasControlChar(status.message()));
  Check(IsUtf8(status.message()));
}

}  // namespace belfry::fuzz
