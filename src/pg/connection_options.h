// Session settings carried in a connection string, so that every connection made from it (and
// every reconnect) starts with them without an extra round trip: libpq's `options` parameter,
// "-c name=value" (https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNECT-OPTIONS).
#pragma once

#include <string>

#include "belfry/status.h"

namespace belfry {

// `database_url` (a postgresql:// URI or a keyword=value string) rewritten as a keyword=value
// string that also sets `name` to `value` for the session, after any options it already had.
// Invalid when libpq cannot parse `database_url`. `name` must be a PostgreSQL setting name and
// `value` must not contain spaces or backslashes.
StatusOr<std::string> WithSessionSetting(const std::string& database_url, const std::string& name,
                                         const std::string& value);

}  // namespace belfry
