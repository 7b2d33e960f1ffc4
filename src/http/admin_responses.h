// The admin API's responses: JSON bodies with Cache-Control: no-store, and its error answers
// ({"error": message}; a 500 with an error id whose text only the log has).
#pragma once

#include <string>
#include <string_view>

#include "belfry/status.h"

namespace httplib {
struct Response;
}  // namespace httplib

namespace belfry {

inline constexpr std::string_view kJsonType = "application/json";

// {"error": message}.
std::string ErrorBody(std::string_view message);

// `body` is JSON text already.
void SendJsonText(httplib::Response& res, int status, std::string body);

void SendError(httplib::Response& res, int status, std::string_view message);

// 500: the client learns only an id; the log line with the same id has `log_text`, which may
// name tables, statements or internals that are not the client's business.
void SendInternalError(httplib::Response& res, std::string_view log_text);

// A store or ledger failure: Retryable is the database being unreachable (503, try again);
// anything else is a server fault (500, its text logged under an error id).
void SendStoreError(httplib::Response& res, std::string_view what, const Status& st);

// The message of an error httplib produced itself, by status ("no such route", ...).
const char* DefaultErrorMessage(int status);

}  // namespace belfry
