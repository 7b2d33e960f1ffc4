// Reading an admin API request: the id at the end of its path and its query parameters, each
// checked, percent-decoded where the raw target is read, with the error message a 400 carries.
// Functions that return std::string return that message, or "" when the input is fine.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/pagination.h"

namespace httplib {
struct Request;
}  // namespace httplib

namespace belfry {

// Strict percent-decoding of one path segment or query value ('+' stays '+'). nullopt on a
// malformed escape.
std::optional<std::string> PercentDecode(std::string_view in);

// Every value of query parameter `name` in the raw request target, percent-decoded ('+' stays
// '+'); nullopt for a malformed escape. httplib's parsed params keep only the text after the last
// '=' of each one, and a label filter's value is itself key=value.
std::optional<std::vector<std::string>> RawQueryValues(std::string_view target, std::string_view name);

// Text PostgreSQL can compare with stored text: valid UTF-8 without NUL. Ids, owners and topics
// are validated that way at ingestion, so anything else matches nothing, and would make
// PostgreSQL fail the statement (invalid byte sequence) or libpq cut the value at the NUL.
bool IsStorableText(std::string_view s);

// A whole decimal integer; nullopt on anything else.
std::optional<int64_t> ParseInt(std::string_view s);

// Every query parameter must be one of `allowed`.
std::string CheckParams(const httplib::Request& req, std::initializer_list<std::string_view> allowed);

// The first value of `name`, or "" when absent. An empty value counts as absent.
std::string Param(const httplib::Request& req, const char* name);

// The id at the end of a route's path (`raw`, still percent-encoded), decoded into *id; the
// message names `what` ("the job id in the path is empty").
std::string DecodePathId(std::string_view raw, std::string_view what, std::string* id);

// An optional integer query parameter in [lo, hi]; *out is left as it is when the parameter is
// absent or empty. Message: "<name> must be an integer in lo..hi, got "<text>"".
std::string IntParam(const httplib::Request& req, const char* name, int64_t lo, int64_t hi, int64_t* out);

// ?limit= by the pagination rule (core/pagination.h): *out is `size.default_limit` (at most
// `max_limit`) when absent, else the value, which must be in 1..max_limit.
std::string PageLimitParam(const httplib::Request& req, PageSize size, int32_t max_limit, int32_t* out);

// ?cursor= by the pagination rule: *position is left empty when absent (the first page), else the
// position the cursor carries; the message is kInvalidCursorMessage.
std::string PageCursorParam(const httplib::Request& req, std::string* position);

}  // namespace belfry
