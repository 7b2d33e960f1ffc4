// PgConnection: a minimal owner of one libpq connection for the benchmark tools. Every failure
// throws std::runtime_error carrying the server's message; the tools report it and exit.
#pragma once

#include <libpq-fe.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace belfry::loadtest {

using PgRows = std::vector<std::vector<std::string>>;

class PgConnection final {
 public:
  // Connects to `url` (a libpq URL or key=value string); when `database` is non-empty it
  // replaces the database named in the URL.
  PgConnection(const std::string& url, const std::string& database);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs one or more statements (simple protocol); returns the last result's rows as text
  // (NULL reads as "").
  PgRows Exec(const std::string& sql);
  // The first column of the first row, or "" when there is none.
  std::string ExecScalar(const std::string& sql);
  // One statement with text parameters $1..$n (extended protocol, unnamed statement).
  PgRows ExecParams(const std::string& sql, const std::vector<std::string>& params);

  void Prepare(const std::string& name, const std::string& sql);
  // Executes a prepared statement with text parameters; results in text (0) or binary (1)
  // format. The caller owns the result.
  PGresult* ExecPrepared(const std::string& name, const std::vector<std::string>& params, int result_format = 0);

  // COPY ... FROM STDIN, in three steps.
  void BeginCopyIn(const std::string& sql);
  void PutCopyData(std::string_view data);
  void EndCopyIn();

  // COPY ... TO STDOUT (text format): calls `line` for every row, without its newline.
  // Returns the number of rows.
  size_t CopyOut(const std::string& sql, const std::function<void(std::string_view line)>& line);

 private:
  [[noreturn]] void Fail(const std::string& what);

  PGconn* conn_ = nullptr;
};

// Splits one COPY text-format row into its fields (no unescaping: the tools only read plain
// identifiers, numbers and \N).
std::vector<std::string_view> SplitCopyRow(std::string_view line);

}  // namespace belfry::loadtest
