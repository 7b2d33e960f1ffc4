// The console's files (issue 37, docs/console.md): the page, its script and its style, from
// web/console/. They are compiled into the binary (cmake/embed_files.cmake), so the console needs
// nothing at run time and loads nothing from another host. `admin.console_dir` serves them from a
// directory instead, read at each request, for working on the console without rebuilding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace belfry {

struct EmbeddedFile {
  std::string_view name;
  std::string_view bytes;
};

// Every file of web/console/ as it was at build time (generated).
const std::vector<EmbeddedFile>& EmbeddedConsoleFiles();

struct ConsoleFile {
  std::string_view content_type;
  std::string body;
};

// The Content-Security-Policy of every console answer: its own script, style and API only; no
// inline script or style, no other host, no framing, no forms posting anywhere.
inline constexpr std::string_view kConsoleSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// A name the console may serve: letters, digits, '.', '-' and '_', not starting with '.'.
bool IsConsoleFileName(std::string_view name);

// The Content-Type for a file name, by its extension (application/octet-stream when unknown).
std::string_view ConsoleContentType(std::string_view name);

// The file `name` ("" is index.html): from `dir` when it is not empty, else the embedded copy.
// nullopt when there is no such file or the name is not a console file name.
std::optional<ConsoleFile> LoadConsoleFile(std::string_view name, const std::string& dir);

}  // namespace belfry
