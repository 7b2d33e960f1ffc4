// PgSession: one lazily opened libpqxx connection with the prepared statements its owner needs.
// A connection fault drops the connection; the next Run reconnects and re-prepares.
#pragma once

#include <exception>
#include <memory>
#include <pqxx/connection>
#include <string>
#include <utility>
#include <vector>

#include "belfry/status.h"
#include "pg/connection_options.h"
#include "pg/pg_status.h"

namespace belfry {

struct PreparedStatement {
  const char* name;
  const char* sql;
};

// Thread-compatible: one instance per thread.
class PgSession final {
 public:
  // Every connection prepares `statements`, a list that may be shared with other sessions.
  // REQUIRES: statements is not null.
  PgSession(PgConninfo conninfo, std::shared_ptr<const std::vector<PreparedStatement>> statements);
  // Prepares `database_url` (PgConninfo), with a list of its own.
  PgSession(const std::string& database_url, std::vector<PreparedStatement> statements);
  PgSession(const PgSession&) = delete;
  PgSession& operator=(const PgSession&) = delete;
  ~PgSession();

  // Connects if needed, then runs `fn(pqxx::connection&)`, which returns a Status. Exceptions
  // from fn are translated with StatusFromException(e, context); after a Retryable error the
  // connection is dropped, so a half-broken session is never reused.
  template <typename Fn>
  Status Run(const char* context, Fn&& fn) {
    if (Status st = Connect(context); !st.ok()) return st;
    Status result;
    try {
      result = std::forward<Fn>(fn)(*conn_);
    } catch (const std::exception& e) {
      result = StatusFromException(e, context);
    }
    if (result.retryable() || !conn_->is_open()) Disconnect();
    return result;
  }

  void Disconnect();

  // Whether the connected database is a Citus coordinator (the citus extension is installed),
  // read at every connect. The stores then send the statements that Citus cannot run across
  // shards one shard at a time (docs/scale-out.md, "Statements changed for Citus").
  // REQUIRES: called inside Run().
  bool citus() const { return citus_; }

  // Whether the database's collation orders text byte-wise ("C" or "POSIX"), read at every
  // connect: a prefix of ids is then one range of the id index. REQUIRES: called inside Run().
  bool byte_ordered_text() const { return byte_ordered_text_; }

 private:
  Status Connect(const char* context);

  const PgConninfo conninfo_;
  const std::shared_ptr<const std::vector<PreparedStatement>> statements_;
  std::unique_ptr<pqxx::connection> conn_;
  bool citus_ = false;
  bool byte_ordered_text_ = false;
};

}  // namespace belfry
