// The one pagination rule of belfry's reads, for the admin API and the CLI alike: how big a page
// may be, and how a page's position travels as a cursor.
//
// - A page holds at most `limit` items, `limit` in 1..max (PageSize below); a request that gives
//   none gets the default.
// - A page that may be followed by another carries "next_cursor": the store's position after its
//   last item (JobPage::next_after_id, ExecutionPage::next_cursor), base64url-encoded, so that it
//   is one opaque, URL-safe token; null on the last page. A client passes it back unchanged.
// - The CLI takes the same defaults and bounds as the API (`--limit`, `-n`, `--top`), so that
//   `belfry ... --json` with no flags prints what the route answers with no parameters.
// - The audit trail's pages (GET /v1/jobs/{id}/changes, `belfry jobs audit`) are the one older
//   exception: their cursor is the last change id in decimal (EncodeJobChangePage,
//   core/job_change.h), which both ends already accept as an integer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "belfry/status.h"

namespace belfry {

struct PageSize {
  int32_t default_limit = 0;
  int32_t max_limit = 0;
};

// GET /v1/jobs and `belfry jobs list` (admin.max_list_limit may lower the API's maximum).
inline constexpr PageSize kJobListPage{100, 1000};
// GET /v1/jobs/{id}/executions and `belfry jobs history`.
inline constexpr PageSize kExecutionPage{50, 1000};
// GET /v1/jobs/{id}/changes and `belfry jobs audit`.
inline constexpr PageSize kChangePage{50, 1000};
// GET /v1/bulk-ops and `belfry bulk list`: the latest operations, one page only.
inline constexpr PageSize kBulkOpPage{100, 100};

// Lists that have no cursor follow the same 1..max rule for how many items they show.
// GET /v1/jobs/{id}/next?n= and `belfry jobs next -n`: a job's next fires.
inline constexpr PageSize kNextFiresList{10, 1000};
// GET /v1/load?top= and `belfry load --top`: how many owners or topics a breakdown lists.
inline constexpr PageSize kLoadBreakdownTop{20, 1000};

// Invalid ("limit must be an integer in 1..<max>, got "<text>"") unless `text` is a whole
// decimal integer in 1..max; `text` is what the client sent.
StatusOr<int32_t> ParsePageLimit(std::string_view text, int32_t max_limit);

// The same rule for a limit already read as a number (the CLI's --limit).
Status CheckPageLimit(int64_t limit, int32_t max_limit);

// The cursor of the page after `position` (a store's keyset position); "" (no next page) for "".
std::string EncodePageCursor(std::string_view position);

// The position a cursor carries: nullopt when `cursor` is not one EncodePageCursor made (not
// base64url, or empty once decoded). REQUIRES: cursor is not empty (an empty one means "from the
// start", which the caller handles).
std::optional<std::string> DecodePageCursor(std::string_view cursor);

// GET /v1/jobs?id_prefix=: the smallest string that sorts after every string starting with
// `prefix`, in byte order (UTF-8's code point order): the prefix with its last code point
// increased (U+10FFFF dropped and the one before increased; the surrogates skipped). "" when no
// such string exists (an empty prefix, or one of U+10FFFF only). REQUIRES: prefix is valid UTF-8.
std::string PrefixUpperBound(std::string_view prefix);

// What a client that sent a bad cursor is told.
inline constexpr std::string_view kInvalidCursorMessage =
    "cursor is not valid: pass back the next_cursor of a previous page unchanged";

}  // namespace belfry
