#include "http/console_assets.h"

#include <fstream>
#include <sstream>

namespace belfry {

bool IsConsoleFileName(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string_view ConsoleContentType(std::string_view name) {
  auto ends = [&](std::string_view ext) { return name.ends_with(ext); };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

std::optional<ConsoleFile> LoadConsoleFile(std::string_view name, const std::string& dir) {
  if (name.empty()) name = "index.html";
  if (!IsConsoleFileName(name)) return std::nullopt;
  if (!dir.empty()) {
    std::ifstream in(dir + "/" + std::string(name), std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ConsoleFile{ConsoleContentType(name), ss.str()};
  }
  for (const EmbeddedFile& f : EmbeddedConsoleFiles()) {
    if (f.name == name) return ConsoleFile{ConsoleContentType(name), std::string(f.bytes)};
  }
  return std::nullopt;
}

}  // namespace belfry
