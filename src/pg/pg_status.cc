#include "pg/pg_status.h"

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
  if (IsRetryableSqlState(sqlstate)) return Status::Retryable(std::move(text));
  const std::string_view cls = sqlstate.substr(0, sqlstate.size() >= 2 ? 2 : 0);
  // 25: invalid transaction state (e.g. a write on a hot standby); 42: syntax error or access
  // rule violation (a missing table or column: not migrated, or a newer schema); 55: object not in
  // prerequisite state; 58: system error; XX: internal error.
  if (cls == "25" || cls == "42" || cls == "55" || cls == "58" || cls == "XX")
    return Status::FailedPrecondition(std::move(text));
  return Status::Invalid("sql", std::move(text));
}

Status StatusFromException(const std::exception& e, std::string_view context) {
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return Status::Retryable(Join(context, e.what()));
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e); sql != nullptr) {
    return StatusFromSqlState(sql->sqlstate(), context, e.what());
  }
  if (dynamic_cast<const pqxx::transaction_rollback*>(&e) != nullptr) {
    return Status::Retryable(Join(context, e.what()));
  }
  return Status::Invalid("pg", Join(context, e.what()));
}

}  // namespace belfry
