#include "pg/pg_status.h"

#include <new>
#include <pqxx/except>

namespace belfry {
namespace {

std::string Join(std::string_view context, std::string_view message) {
  std::string out(context);
  out += ": ";
  // libpq messages end in a newline (sometimes with DETAIL lines); keep them on one line.
  for (char c : message) out.push_back(c == '\n' ? ' ' : c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

bool IsRetryableSqlState(std::string_view sqlstate) {
  if (sqlstate.size() != 5) return false;
  const std::string_view cls = sqlstate.substr(0, 2);
  return cls == "08" || cls == "40" || cls == "53" || cls == "57";
}

Status StatusFromSqlState(std::string_view sqlstate, std::string_view context, std::string_view message) {
  std::string text = Join(context, message);
  if (!sqlstate.empty()) text += " (SQLSTATE " + std::string(sqlstate) + ")";
  // No SQLSTATE: the server never answered (the connection broke mid-statement).
  if (sqlstate.empty() || IsRetryableSqlState(sqlstate)) return Status::Retryable(std::move(text));
  // A row routed to a default partition while a partition for its range is being created or
  // attached (the executions sweep) violates the partition constraint: a race, not the data.
  if (sqlstate == "23514" && message.find("partition constraint") != std::string_view::npos)
    return Status::Retryable(std::move(text));
  const std::string_view cls = sqlstate.substr(0, sqlstate.size() >= 2 ? 2 : 0);
  // The data itself is refused: no retry can cure it (docs/reliability.md, "Poison commands and
  // reports"). P0: a PL/pgSQL RAISE (a trigger's); 22: data exception; 23: integrity constraint.
  if (cls == "P0" || cls == "22" || cls == "23") return Status::Invalid("sql", std::move(text));
  // Everything else is the database in the wrong state, e.g. 25: invalid transaction state (a
  // write on a hot standby); 42: syntax error or access rule violation (a missing table or column:
  // not migrated, or a newer schema); 55: object not in prerequisite state; 58: system error; XX:
  // internal error. Retried as a whole, with an error in the log, until an operator fixes it.
  return Status::FailedPrecondition(std::move(text));
}

Status StatusFromException(const std::exception& e, std::string_view context) {
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr ||
      dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return Status::Retryable(Join(context, e.what()));
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e); sql != nullptr) {
    return StatusFromSqlState(sql->sqlstate(), context, e.what());
  }
  if (dynamic_cast<const pqxx::transaction_rollback*>(&e) != nullptr) {
    return Status::Retryable(Join(context, e.what()));
  }
  // A library or program fault, not the data's: never a reason to refuse a record for good.
  return Status::FailedPrecondition(Join(context, e.what()));
}

}  // namespace belfry
