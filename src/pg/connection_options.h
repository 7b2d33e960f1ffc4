// Session settings carried in a connection string, so that every connection made from it (and
// every reconnect) starts with them without an extra round trip: libpq's `options` parameter,
// "-c name=value" (https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNECT-OPTIONS).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "belfry/status.h"

namespace belfry {

// `database_url` (a postgresql:// URI or a keyword=value string) rewritten as a keyword=value
// string that also sets `name` to `value` for the session, after any options it already had.
// Invalid when libpq cannot parse `database_url`. `name` must be a PostgreSQL setting name and
// `value` must not contain spaces or backslashes.
StatusOr<std::string> WithSessionSetting(const std::string& database_url, const std::string& name,
                                         const std::string& value);

// A keyword=value string that connects to `standby_url` and, when it cannot, to `primary_url`:
// libpq's multi-host form (host='s,p' port='ps,pp') with target_session_attrs=prefer-standby
// (https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-MULTIPLE-HOSTS). Every other
// parameter is the standby's. Invalid when either cannot be parsed, when either names hostaddr
// or more than one host, or when they differ in anything but host and port (user, dbname,
// password, TLS: one parameter set must serve both servers).
// libpq waits for a connection without limit unless connect_timeout is set, so an unreachable
// database (packets dropped, or a listener that never answers) stalled whatever connected: every
// /readyz, every /metrics scrape. Every connection belfry opens (PgSession, PgDueQueryStream) goes
// through this: `database_url` as a keyword=value string with connect_timeout=5 (seconds, per host
// tried) added, unless it already sets connect_timeout (that is how to configure it:
// `postgresql://...?connect_timeout=10`). Returned unchanged when libpq cannot parse it.
constexpr int kDefaultConnectTimeoutS = 5;
std::string WithConnectTimeout(const std::string& database_url);

// A connection string ready to connect with: `database_url` through WithConnectTimeout, once.
// PgSession and PgDueQueryStream connect with it as it is, so the stores built from one
// (PgJobStoreOptions) share one preparation.
class PgConninfo final {
 public:
  explicit PgConninfo(const std::string& database_url) : conninfo_(WithConnectTimeout(database_url)) {}
  const std::string& str() const { return conninfo_; }

 private:
  std::string conninfo_;
};

StatusOr<std::string> PreferStandbyConninfo(const std::string& standby_url, const std::string& primary_url);

// `url` (a URI or keyword=value string) as a keyword=value string with `overrides` replacing (or
// adding) those keywords: a Citus worker reached with belfry's URL (PgWorkerTickRouter), a test's
// superuser URL. An unparseable `url` contributes nothing.
std::string WithConninfoOverrides(const std::string& url,
                                  const std::vector<std::pair<std::string, std::string>>& overrides);

// The value of `keyword` in `url`, or `fallback` when it is absent or empty.
std::string ConninfoValue(const std::string& url, const std::string& keyword, const std::string& fallback);

}  // namespace belfry
