#include "loadtest/pg_connection.h"

#include <fmt/format.h>

#include <stdexcept>

namespace belfry::loadtest {
namespace {

PgRows RowsOf(PGresult* r) {
  PgRows rows;
  for (int i = 0; i < PQntuples(r); ++i) {
    std::vector<std::string> row;
    for (int j = 0; j < PQnfields(r); ++j) row.emplace_back(PQgetvalue(r, i, j), PQgetlength(r, i, j));
    rows.push_back(std::move(row));
  }
  return rows;
}

bool Succeeded(PGresult* r) {
  const ExecStatusType st = PQresultStatus(r);
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

}  // namespace

PgConnection::PgConnection(const std::string& url, const std::string& database) {
  const char* keywords[] = {"dbname", database.empty() ? nullptr : "dbname", nullptr};
  const char* values[] = {url.c_str(), database.empty() ? nullptr : database.c_str(), nullptr};
  conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string message = PQerrorMessage(conn_);
    PQfinish(conn_);
    throw std::runtime_error("connecting to PostgreSQL: " + message);
  }
  Exec("SET client_min_messages = warning");
}

PgConnection::~PgConnection() { PQfinish(conn_); }

void PgConnection::Fail(const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", what, PQerrorMessage(conn_)));
}

PgRows PgConnection::Exec(const std::string& sql) {
  if (PQsendQuery(conn_, sql.c_str()) == 0) Fail("sending query");
  PGresult* last = nullptr;
  std::string error;
  while (PGresult* r = PQgetResult(conn_)) {
    if (!Succeeded(r) && error.empty()) error = PQresultErrorMessage(r);
    if (last != nullptr) PQclear(last);
    last = r;
  }
  PgRows rows;
  if (last != nullptr) {
    if (error.empty()) rows = RowsOf(last);
    PQclear(last);
  }
  if (!error.empty()) throw std::runtime_error(fmt::format("{}  in: {}", error, sql.substr(0, 300)));
  return rows;
}

std::string PgConnection::ExecScalar(const std::string& sql) {
  const PgRows rows = Exec(sql);
  return rows.empty() || rows[0].empty() ? std::string() : rows[0][0];
}

PgRows PgConnection::ExecParams(const std::string& sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                             nullptr, nullptr, 0);
  if (!Succeeded(r)) {
    const std::string message = PQresultErrorMessage(r);
    PQclear(r);
    throw std::runtime_error(fmt::format("{}  in: {}", message, sql.substr(0, 300)));
  }
  PgRows rows = RowsOf(r);
  PQclear(r);
  return rows;
}

void PgConnection::Prepare(const std::string& name, const std::string& sql) {
  PGresult* r = PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr);
  const bool ok = Succeeded(r);
  const std::string message = PQresultErrorMessage(r);
  PQclear(r);
  if (!ok) throw std::runtime_error("preparing " + name + ": " + message);
}

PGresult* PgConnection::ExecPrepared(const std::string& name, const std::vector<std::string>& params,
                                     int result_format) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  PGresult* r = PQexecPrepared(conn_, name.c_str(), static_cast<int>(values.size()), values.data(), nullptr,
                               nullptr, result_format);
  if (!Succeeded(r)) {
    const std::string message = PQresultErrorMessage(r);
    PQclear(r);
    throw std::runtime_error("executing " + name + ": " + message);
  }
  return r;
}

void PgConnection::BeginCopyIn(const std::string& sql) {
  PGresult* r = PQexec(conn_, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COPY_IN;
  const std::string message = PQresultErrorMessage(r);
  PQclear(r);
  if (!ok) throw std::runtime_error("starting COPY: " + message);
}

void PgConnection::PutCopyData(std::string_view data) {
  if (!data.empty() && PQputCopyData(conn_, data.data(), static_cast<int>(data.size())) != 1)
    Fail("COPY data");
}

void PgConnection::EndCopyIn() {
  if (PQputCopyEnd(conn_, nullptr) != 1) Fail("ending COPY");
  std::string error;
  while (PGresult* r = PQgetResult(conn_)) {
    if (!Succeeded(r)) error = PQresultErrorMessage(r);
    PQclear(r);
  }
  if (!error.empty()) throw std::runtime_error("COPY: " + error);
}

size_t PgConnection::CopyOut(const std::string& sql, const std::function<void(std::string_view line)>& line) {
  PGresult* r = PQexec(conn_, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COPY_OUT;
  const std::string message = PQresultErrorMessage(r);
  PQclear(r);
  if (!ok) throw std::runtime_error(fmt::format("starting COPY: {}  in: {}", message, sql.substr(0, 300)));
  size_t rows = 0;
  char* buffer = nullptr;
  int n = 0;
  while ((n = PQgetCopyData(conn_, &buffer, /*async=*/0)) > 0) {
    std::string_view text(buffer, static_cast<size_t>(n));
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    line(text);
    PQfreemem(buffer);
    ++rows;
  }
  if (n == -2) Fail("COPY out");
  std::string error;
  while (PGresult* res = PQgetResult(conn_)) {
    if (!Succeeded(res)) error = PQresultErrorMessage(res);
    PQclear(res);
  }
  if (!error.empty()) throw std::runtime_error("COPY: " + error);
  return rows;
}

std::vector<std::string_view> SplitCopyRow(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

}  // namespace belfry::loadtest
