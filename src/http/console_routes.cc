// GET /ui/ and its files: the console (docs/console.md). The files hold no data and need no
// token; the page reads and writes through the API with the token the operator gives it.
#include <httplib.h>

#include <string>

#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"
#include "http/console_assets.h"

namespace belfry {

void SetConsoleHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy", std::string(kConsoleSecurityPolicy));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
}

void ServeConsoleFile(AdminContext& ctx, const std::string& name, httplib::Response& res) {
  std::optional<ConsoleFile> file = LoadConsoleFile(name, ctx.options.console_dir);
  SetConsoleHeaders(res);
  if (!file) return SendError(res, 404, "no such console file: " + name);
  res.status = 200;
  // Revalidated on every load: a new belfry's console is never mixed with an old one's script.
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::move(file->body), std::string(file->content_type));
}

}  // namespace belfry
