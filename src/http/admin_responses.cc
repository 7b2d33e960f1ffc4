#include "http/admin_responses.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <random>

#include "core/json_writer.h"

namespace belfry {
namespace {

// A fresh id for one internal error: 16 hex digits, random, so that ids from different nodes
// and restarts do not collide.
std::string NewErrorId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(rng()));
  return out;
}

}  // namespace

std::string ErrorBody(std::string_view message) {
  std::string body = "{\"error\":";
  AppendJsonString(&body, message);
  body.push_back('}');
  return body;
}

void SendJsonText(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(std::move(body), std::string(kJsonType));
}

void SendError(httplib::Response& res, int status, std::string_view message) {
  SendJsonText(res, status, ErrorBody(message));
}

void SendInternalError(httplib::Response& res, std::string_view log_text) {
  const std::string id = NewErrorId();
  spdlog::error("admin: internal error error_id={}: {}", id, log_text);
  std::string body = "{\"error\":\"internal error\",\"error_id\":";
  AppendJsonString(&body, id);
  body.push_back('}');
  SendJsonText(res, 500, std::move(body));
}

void SendStoreError(httplib::Response& res, std::string_view what, const Status& st) {
  if (st.retryable()) {
    spdlog::warn("admin: {} unavailable: {}", what, st.ToString());
    SendError(res, 503, std::string(what) + " is unavailable, retry later: " + st.message());
  } else {
    SendInternalError(res, std::string(what) + " failed: " + st.ToString());
  }
}

const char* DefaultErrorMessage(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 404:
      return "no such route";
    case 405:
      return "method not allowed";
    case 413:
      return "request too large";
    case 414:
      return "request URI too long";
    default:
      return status >= 500 ? "internal error" : "request failed";
  }
}

}  // namespace belfry
