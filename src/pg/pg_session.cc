#include "pg/pg_session.h"

#include <pqxx/nontransaction>

#include "pg/pg_schema_queries.h"

namespace belfry {

PgSession::PgSession(PgConninfo conninfo, std::shared_ptr<const std::vector<PreparedStatement>> statements)
    : conninfo_(std::move(conninfo)), statements_(std::move(statements)) {}

PgSession::PgSession(const std::string& database_url, std::vector<PreparedStatement> statements)
    : PgSession(PgConninfo(database_url),
                std::make_shared<const std::vector<PreparedStatement>>(std::move(statements))) {}

PgSession::~PgSession() = default;

Status PgSession::Connect(const char* context) {
  if (conn_ != nullptr) return Status::Ok();
  try {
    auto conn = std::make_unique<pqxx::connection>(conninfo_.str());
    for (const PreparedStatement& s : *statements_) conn->prepare(s.name, s.sql);
    pqxx::nontransaction facts(*conn);
    citus_ = facts.exec(pg_queries::kCitusInstalledSql)[0][0].as<bool>();
    byte_ordered_text_ = facts.exec(pg_queries::kByteOrderedTextSql)[0][0].as<bool>();
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
