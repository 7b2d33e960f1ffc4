// LocalSuperuser: a superuser connection to a PostgreSQL server of the local stack, for the test
// fixtures that need one (pg_stat_statements, the Citus test databases). belfry's role is not a
// superuser; the stack's superuser `postgres` is reachable without a password over the server's
// Unix socket, which is found the way scripts/local-stack finds its server: the postgres process
// listening on the URL's port, and the postmaster.pid of its data directory. BELFRY_PG_SUPERUSER_URL
// names a superuser connection instead (for the server of BELFRY_DATABASE_URL only).
#pragma once

#include <optional>
#include <string>

#include "pg/connection_options.h"  // WithConninfoOverrides, ConninfoValue

namespace belfry {

// A superuser connection string for database `dbname` on the server that `url` reaches. With
// `allow_env_override`, BELFRY_PG_SUPERUSER_URL wins when set. nullopt and *error when no local
// server listens on the URL's port.
std::optional<std::string> LocalSuperuserUrl(const std::string& url, const std::string& dbname,
                                             bool allow_env_override, std::string* error);

}  // namespace belfry
