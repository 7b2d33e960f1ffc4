#include "pg/pg_session.h"

#include "pg/connection_options.h"

namespace belfry {

PgSession::PgSession(std::string database_url, std::vector<PreparedStatement> statements)
    : database_url_(WithConnectTimeout(database_url)), statements_(std::move(statements)) {}

PgSession::~PgSession() = default;

Status PgSession::Connect(const char* context) {
  if (conn_ != nullptr) return Status::Ok();
  try {
    auto conn = std::make_unique<pqxx::connection>(database_url_);
    for (const PreparedStatement& s : statements_) conn->prepare(s.name, s.sql);
    conn_ = std::move(conn);
    return Status::Ok();
  } catch (const std::exception& e) {
    Status st = StatusFromException(e, context);
    // A server that refuses connections is a transient fault whatever libpqxx calls it.
    if (!st.retryable()) st = Status::Retryable(st.message());
    return st;
  }
}

void PgSession::Disconnect() { conn_.reset(); }

}  // namespace belfry
