// Base64url: RFC 4648 §5 without padding, the encoding of the admin API's page cursors
// (core/pagination.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace belfry {

std::string Base64UrlEncode(std::string_view data);

// nullopt on a character outside the alphabet, an impossible length, or nonzero leftover bits
// (so that each byte string has exactly one encoding).
std::optional<std::string> Base64UrlDecode(std::string_view text);

}  // namespace belfry
