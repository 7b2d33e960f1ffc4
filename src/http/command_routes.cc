// POST /v1/commands: one command over HTTP, through the same path as every producer's (Kafka).
// docs/console.md, "Commands over HTTP", says what each answer means.
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/request_params.h"
#include "http/write_token.h"

namespace belfry {

StatusOr<WriteTokenClaims> AuthorizeWrite(const AdminContext& ctx, std::string_view authorization) {
  const std::optional<std::string_view> token = BearerToken(authorization);
  if (!token || token->empty()) {
    return Status::Invalid("write_token",
                           "a command needs a write token: send \"Authorization: Bearer <token>\" with a token "
                           "that `belfry token` minted");
  }
  return VerifyWriteToken(*token, ctx.options.write_token_secret, ctx.deps.clock->NowMs());
}

void ServePostCommand(AdminContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (ctx.deps.commands == nullptr || ctx.options.write_token_secret.empty()) {
    return SendError(res, 403,
                     "writes are off on this node: set admin.write_token_secret to take commands over HTTP "
                     "(docs/console.md)");
  }
  StatusOr<WriteTokenClaims> who = AuthorizeWrite(ctx, req.get_header_value("Authorization"));
  if (!who.ok()) {
    res.set_header("WWW-Authenticate", "Bearer realm=\"belfry\", error=\"invalid_token\"");
    return SendError(res, 401, who.status().message());
  }
  if (std::string bad = CheckParams(req, {"wait_ms"}); !bad.empty()) return SendError(res, 400, bad);
  int64_t wait_ms = ctx.options.command_wait_ms;
  if (std::string bad = IntParam(req, "wait_ms", 0, kMaxCommandWaitMs, &wait_ms); !bad.empty()) {
    return SendError(res, 400, bad);
  }
  // A JSON content type: a cross-site HTML form cannot send one without a CORS preflight, which
  // this server never grants (defence in depth: there are no cookies to ride on either).
  const std::string type = req.get_header_value("Content-Type");
  if (type.substr(0, type.find(';')) != "application/json") {
    return SendError(res, 415, "the body must be one JSON command object, sent as Content-Type: application/json");
  }
  const nlohmann::json command = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!command.is_object()) {
    return SendError(res, 400, "the body must be one JSON command object (README, \"Command format\")");
  }
  const auto id = command.find("id");
  if (id == command.end() || !id->is_string() || id->get<std::string>().empty()) {
    return SendError(res, 400, "the command needs an \"id\" (a string): it is the command's Kafka key");
  }
  if (command.contains("actor")) {
    return SendError(res, 400,
                     "leave \"actor\" out: a command over HTTP is made by its write token's actor (\"" +
                         who->actor + "\")");
  }
  // The body is published as it came: the consumer judges it as it judges any producer's command.
  const CommandSubmission sent =
      ctx.deps.commands->Submit(id->get<std::string>(), req.body, who->actor, std::chrono::milliseconds(wait_ms));
  if (!sent.status.ok()) {
    res.set_header("Retry-After", std::to_string(ctx.options.retry_after_s));
    return SendError(res, 503, "the command was not published to the commands topic: " + sent.status.message());
  }
  if (!sent.outcome) {
    nlohmann::json pending = {{"id", id->get<std::string>()},
                              {"status", "pending"},
                              {"partition", sent.partition},
                              {"offset", sent.offset}};
    return SendJsonText(res, 202, pending.dump());
  }
  const nlohmann::json outcome = nlohmann::json::parse(*sent.outcome, nullptr, /*allow_exceptions=*/false);
  const bool rejected = outcome.is_object() && outcome.contains("status") && outcome["status"] == "rejected";
  SendJsonText(res, rejected ? 422 : 200, *sent.outcome);
}

}  // namespace belfry
