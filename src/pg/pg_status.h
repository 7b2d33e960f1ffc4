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

// Retryable for the classes above, for no SQLSTATE at all (a broken connection) and for a
// partition-constraint violation (23514 on a row routed while a partition is created); Invalid
// ("sql") for the data refused for good: P0 (a RAISE, e.g. a trigger's), 22 (data exception), 23
// (integrity constraint); FailedPrecondition for the rest, a database in the wrong state (25, 42
// such as an undefined table: not migrated, 55, 58, XX, ...). `context` prefixes the message
// ("apply actions: ..."). Consumers isolate the records of an Invalid batch and retry the rest
// (core/batch_bisection.h).
Status StatusFromSqlState(std::string_view sqlstate, std::string_view context, std::string_view message);

// Translates an exception thrown by libpqxx (or anything else) during `context`. Broken
// connections, in-doubt commits and std::bad_alloc are Retryable; an SQL error as above; any other
// exception (a libpqxx usage or conversion fault) FailedPrecondition, never Invalid.
Status StatusFromException(const std::exception& e, std::string_view context);

}  // namespace belfry
