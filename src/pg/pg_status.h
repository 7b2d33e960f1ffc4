// Translation of PostgreSQL and libpqxx errors into belfry's Status, at the adapter boundary.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "belfry/status.h"

namespace belfry {

// Returns true iff an error with this SQLSTATE is worth retrying on a fresh connection: classes
// 08 (connection exception), 40 (transaction rollback: serialization failure, deadlock),
// 53 (insufficient resources) and 57 (operator intervention, e.g. admin shutdown).
bool IsRetryableSqlState(std::string_view sqlstate);

// Retryable for the classes above; FailedPrecondition for a database in the wrong state (25, 42
// such as an undefined table: not migrated, 55, 58, XX); Invalid ("sql") for the rest, which are
// errors in the data (22, 23). `context` prefixes the message ("apply actions: ...").
Status StatusFromSqlState(std::string_view sqlstate, std::string_view context, std::string_view message);

// Translates an exception thrown by libpqxx (or anything else) during `context`. Broken
// connections and in-doubt commits are Retryable.
Status StatusFromException(const std::exception& e, std::string_view context);

}  // namespace belfry
